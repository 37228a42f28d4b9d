-- The relation types of a workspace in order (`get_graph_vocabulary` counts them from this
-- index alone; `get_relations` by type alone reads it).
CREATE INDEX relations_workspace_type ON relations (workspace_id, relation_type);
