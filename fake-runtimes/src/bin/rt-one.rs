//! `rt-one`: a scripted stand-in for the Codex CLI (`codex exec --json`).
fn main() {
    std::process::exit(fake_runtimes::one::main());
}
