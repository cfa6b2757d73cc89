//! How a client uses TCP: connections opened (the kernel's counter) and sockets held open.

/// TCP connections this machine has opened since boot: `ActiveOpens` in the `Tcp:` lines of
/// `/proc/net/snmp` (the network namespace's, so other processes' connects count too).
pub(crate) fn active_opens() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut tcp = snmp.lines().filter(|line| line.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let index = names.split_whitespace().position(|n| n == "ActiveOpens")?;
    values.split_whitespace().nth(index)?.parse().ok()
}

/// The sockets this process holds open: its file descriptors that link to `socket:[...]`.
pub(crate) fn open_sockets() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    let sockets = entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count();
    u64::try_from(sockets).ok()
}
