//! The example plugin of plugin protocol version 1: sandboxes as folders
//! (`fake_runtimes::plugin::dir`).

fn main() -> std::process::ExitCode {
    fake_runtimes::plugin::dir::main()
}
