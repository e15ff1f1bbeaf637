//! The `/etc` of a machine: its own account files and names, and the few host files a
//! program needs to resolve names, trust certificates, load libraries and find the
//! alternatives the system's links point to. Never the host's `shadow`, `gshadow`,
//! `sudoers`, ssh keys, or anything holding credentials (`npmrc`, `pip.conf`).

use super::{HOME, USER, USER_ID};

/// Host files and folders a machine sees read-only at the same path, where they exist.
pub const FROM_HOST: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/networks",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
    "/etc/inputrc",
    "/etc/terminfo",
    "/etc/perl",
    // Debian keeps matplotlib's defaults and fontconfig's configuration here: without
    // them a plot in the code interpreter fails ("Could not find matplotlibrc file") or
    // warns on every cell.
    "/etc/matplotlibrc",
    "/etc/fonts",
];

/// The files written for each machine, by name under `/etc`, with their content.
pub fn generated(hostname: &str) -> [(&'static str, String); 4] {
    [
        ("passwd", passwd()),
        ("group", group()),
        ("hostname", format!("{hostname}\n")),
        ("hosts", hosts(hostname)),
    ]
}

fn passwd() -> String {
    format!(
        "root:x:0:0:root:/root:/bin/bash\n\
         {USER}:x:{USER_ID}:{USER_ID}:{USER}:{HOME}:/bin/bash\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
}

fn group() -> String {
    format!("root:x:0:\n{USER}:x:{USER_ID}:\nnogroup:x:65534:\n")
}

fn hosts(hostname: &str) -> String {
    format!(
        "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t{hostname}\n"
    )
}
