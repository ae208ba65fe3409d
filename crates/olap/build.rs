// The query catalog is compiled in (include_dir); rebuild when it changes.
fn main() {
    println!("cargo:rerun-if-changed=../../queries");
}
