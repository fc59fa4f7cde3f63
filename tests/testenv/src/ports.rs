//! Free loopback ports for the servers.
//!
//! A port is probed by binding it and released before the server binds it, so
//! another process can still take it in between; startup retries with fresh
//! ports when a server reports the address in use.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Mutex;

use anyhow::bail;
use rand::Rng;

/// Below Linux's default ephemeral range (32768-60999): ports there are
/// handed to outgoing connections, including the servers' own connections to
/// each other, which could take a port between the probe and the server's bind.
const RANGE: std::ops::Range<u16> = 20_000..32_000;

/// Ports already given out by this process, never repeated: a server that is
/// still starting has not bound its port yet, so probing alone would not
/// notice it is taken.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port that is free now and that this process has not handed
/// out before, for servers started by tests.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(listen_on_free_port()?.local_addr()?.port())
}

/// A listener on a loopback port that this process has not handed out
/// before. Kept bound, unlike [`free_port`]'s probe, so nothing can take the
/// port first; and outside the ephemeral range, so the port can be bound
/// again after the listener is closed for a while.
pub(crate) fn listen_on_free_port() -> anyhow::Result<TcpListener> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = rand::rng();
    for _ in 0..1000 {
        let port = rng.random_range(RANGE);
        if handed_out.contains(&port) {
            continue;
        }
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            handed_out.insert(port);
            return Ok(listener);
        }
    }
    bail!("found no free loopback port in {RANGE:?}")
}
