# Late interaction from full token vectors (run numpy_bert.py first for questions/facts/speakers .npz in target/ablation-e5-fusion/multilingual-e5-small/).
import sys, os, numpy as np, itertools
sys.path.insert(0,'xtask/ablation')
import e5_fusion as F, locomo as L
model="multilingual-e5-small"; O=f"target/ablation-e5-fusion/{model}"
facts, qs = L.load("../shared/data/locomo-dev"); judge=L.Judge(facts,qs)
Q,qsg=F.embed([q["q"] for q in qs],"questions",O,query=True)
T=L.bm25([f"{f['date']}: {f['fact']}" for f in facts],[q["q"] for q in qs])
def split(z):
    t=z["tokens"]; o=z["offsets"]; return [t[a:b] for a,b in zip(o[:-1],o[1:])]
zq=np.load(O+"/questions.npz"); qt=split(zq)
print("q sign mismatch", np.mean([((a>0)*2-1 != b).mean() for a,b in zip(qt,qsg) if len(a)]))
maps={}
for m,rend in [("facts",F.FACTS_R),("speakers",F.SPEAK_R)]:
    D,ds=F.embed([L.RENDERINGS[rend](f) for f in facts],m,O)
    dt=split(np.load(O+f"/{m}.npz"))
    print(m,"sign mismatch", np.mean([((a>0)*2-1 != b).mean() for a,b in zip(dt,ds) if len(a)]))
    maps[m]=(D,ds,dt)
mu_d=np.concatenate([maps["facts"][2][i] for i in range(len(facts))]).mean(0)
mu_q=np.concatenate(qt).mean(0)
# a model-level mean from unrelated text: the repository's docs, embedded as passages
variants={
 "signs (server)": lambda t,role: np.sign(t),
 "full cosine": lambda t,role: t/np.linalg.norm(t,axis=1,keepdims=True)*np.sqrt(384),
 "signs of (t - corpus doc-token mean)": lambda t,role: np.sign(t-mu_d),
 "signs of (t - role mean)": lambda t,role: np.sign(t-(mu_q if role=="q" else mu_d)),
 "signs of (t - own text's token mean)": lambda t,role: np.sign(t-t.mean(0)) if len(t)>1 else np.sign(t-mu_d),
 "cosine of (t - role mean)": lambda t,role: (lambda c: c/np.linalg.norm(c,axis=1,keepdims=True)*np.sqrt(384))(t-(mu_q if role=="q" else mu_d)),
}
if len(sys.argv)>1: variants={k:v for k,v in variants.items() if k in sys.argv[1:]}
print("| late interaction | cfg | facts R@1 R@5 R@10 MRR | speakers |")
for name,fn in variants.items():
    qv=[fn(t,"q") if len(t) else t for t in qt]
    P={m:F.Prepared(facts,qs,Q,qv,maps[m][0],[fn(t,"d") if len(t) else t for t in maps[m][2]],T,m=="facts") for m in maps}
    A=P["facts"].agreements("all"); rows=[a for a in A if a is not None]
    allv=np.concatenate([a.ravel() for a in rows]); print(name, "agreement pct 10/50/90", np.nanpercentile(allv,[10,50,90]).round(3))
    # late alone
    out=[r["ids"][np.argsort(-np.nan_to_num(F.late(a,False),nan=-9),kind="stable")[:10]] for r,a in zip(P["facts"].rows,A)]
    print(" late alone alike", " ".join(f"{x:.3f}" for x in judge.recall(out)))
    for cfg in [dict(), dict(weighted=False), dict(sim_norm="top20",w_emb=0.5,w_late=0.5), dict(sim_norm="top20",w_emb=0.5,w_late=0.5,weighted=False),
                dict(sim_norm="top20",w_emb=0.5,w_late=0.7,held=0.7), dict(sim_norm="top20",w_emb=0.5,w_late=1.0), dict(sim_norm="top20",w_emb=0.5,w_late=1.0,weighted=False),
                dict(sim_norm="median",w_emb=0.5,w_late=0.7), dict(sim_norm="median",w_emb=0.5,w_late=0.7, weighted=False)]:
        rr=[judge.recall(F.rank_all(P[m],**cfg)) for m in ["facts","speakers"]]
        print(f"| {name} | {cfg} | "+" ".join(f"{x:.3f}" for x in rr[0])+" | "+" ".join(f"{x:.3f}" for x in rr[1])+" |", flush=True)
