//! scripts/link-gcc, the linker every build of this workspace goes through
//! (.cargo/config.toml): with mold when it is on PATH, else the system's
//! default, so a machine without mold still builds. Both ways link a real
//! program here, and the program runs.

use std::path::{Path, PathBuf};
use std::process::Command;

const LINKER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/link-gcc");

/// A C object file to link, compiled by the system's `cc`.
fn object(dir: &Path) -> PathBuf {
    let source = dir.join("main.c");
    std::fs::write(&source, "int main(void) { return 7; }\n").unwrap();
    let object = dir.join("main.o");
    let compiled = Command::new("cc").arg("-c").arg(&source).arg("-o").arg(&object).status().unwrap();
    assert!(compiled.success(), "cc compiles a C file");
    object
}

/// Links `object` into `out` through the script, with `path` as PATH; what
/// linked it, per the program's `.comment` section.
fn link(object: &Path, out: &Path, path: &str) -> String {
    let linked = Command::new(LINKER).arg(object).arg("-o").arg(out).env("PATH", path).output().unwrap();
    assert!(linked.status.success(), "{}", String::from_utf8_lossy(&linked.stderr));
    assert_eq!(Command::new(out).status().unwrap().code(), Some(7), "the linked program runs");
    let comment = Command::new("readelf").args(["-p", ".comment"]).arg(out).output().unwrap();
    String::from_utf8_lossy(&comment.stdout).to_string()
}

fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(tool)).find(|p| p.is_file())
}

#[test]
fn links_with_mold_when_installed_and_without_it_otherwise() {
    let work = tempfile::tempdir().unwrap();
    let object = object(work.path());
    // A PATH with the compiler driver and GNU ld but no mold.
    let bare = work.path().join("bin");
    std::fs::create_dir(&bare).unwrap();
    for tool in ["cc", "ld"] {
        std::os::unix::fs::symlink(on_path(tool).expect("cc and ld are installed"), bare.join(tool)).unwrap();
    }
    let without = link(&object, &work.path().join("without"), bare.to_str().unwrap());
    assert!(!without.contains("mold"), "no mold on PATH, the default linker: {without}");
    match on_path("mold") {
        Some(_) => {
            let with = link(&object, &work.path().join("with"), &std::env::var("PATH").unwrap());
            assert!(with.contains("mold"), "mold on PATH links: {with}");
        }
        None => println!("mold is not installed (scripts/build-tools.sh installs it): only the fallback was tested"),
    }
}
