//! Debian's Chromium and ChromeDriver for the viewer's browser test
//! (`bins/engram/tests/e2e/browser.rs`), installed when missing. Where they cannot be had,
//! a line says so and that test skips itself with the same reason.

use std::path::Path;

use crate::cmd;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Installs `chromium` and `chromium-driver` with apt when `/usr/bin/chromedriver` is missing.
pub fn ensure() {
    if Path::new(CHROMEDRIVER).exists() {
        return;
    }
    println!("engram: installing chromium and chromium-driver for the browser test …");
    let installed = cmd::as_root("env").and_then(|mut update| {
        cmd::run(update.args(["DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "update"]))?;
        let mut install = cmd::as_root("env")?;
        cmd::run(install.args([
            "DEBIAN_FRONTEND=noninteractive",
            "apt-get",
            "-q",
            "-y",
            "--no-install-recommends",
            "install",
            "chromium",
            "chromium-driver",
        ]))
    });
    if let Err(error) = installed {
        println!("engram: the browser test will be skipped: cannot install chromium ({error:#})");
    }
}
