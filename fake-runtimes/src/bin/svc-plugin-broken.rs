//! A plugin that fails on purpose, its fault named by its file name's last dash part
//! (`fake_runtimes::plugin::broken`).

fn main() -> std::process::ExitCode {
    fake_runtimes::plugin::broken::main()
}
