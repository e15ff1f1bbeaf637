//! `rt-two`: a scripted stand-in for Claude Code (`claude -p --output-format stream-json`).
fn main() {
    std::process::exit(fake_runtimes::two::main());
}
