//! Who is on the other end of a connection to the API, and the rule that the programs a run
//! started (its shell, plugin servers, checks, its desktop's programs, and everything they
//! started) never drive it: an agent that could submit tasks or answer its own approvals
//! would need no person. The kernel names the peer (`SO_PEERCRED` on the Unix socket; on
//! TCP from this machine, the process holding the connection's other end), and `processes::kept_by`
//! says whether it runs under a keeper, in this Deskhand or any other.

use std::net::{IpAddr, SocketAddr};

use tokio::net::UnixStream;

use deskhand_engine::processes::Holder;

/// A connection's client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    /// On the Unix socket, as `SO_PEERCRED` tells it (no pid: it is in a namespace the
    /// service cannot see into).
    Socket { pid: Option<u32>, uid: Option<u32> },
    /// On the TCP listener (which requires the token): its address, and its process when it
    /// is on this machine and this user's.
    Tcp {
        address: SocketAddr,
        pid: Option<u32>,
    },
}

impl Peer {
    /// The client on a Unix socket connection, as `SO_PEERCRED` names it.
    pub fn of_socket(stream: &UnixStream) -> Self {
        let credentials = stream.peer_cred().ok();
        Peer::Socket {
            pid: credentials
                .and_then(|c| c.pid())
                .and_then(|pid| u32::try_from(pid).ok())
                .filter(|&pid| pid > 0),
            uid: credentials.map(|c| c.uid()),
        }
    }

    /// The client on a TCP connection from `address` to `local`. A client on this machine
    /// comes from loopback, or from the very address it connected to (one of this machine's
    /// own, with `--listen 0.0.0.0`). Finding its process reads `/proc` (milliseconds), so
    /// this runs in the blocking pool, never on the accept loop.
    pub fn of_tcp(address: SocketAddr, local: Option<SocketAddr>) -> Self {
        let pid = match local {
            Some(local) if is_from_this_machine(address, local) => local_pid(address, local),
            _ => None,
        };
        Peer::Tcp { address, pid }
    }

    fn pid(&self) -> Option<u32> {
        match self {
            Peer::Socket { pid, .. } | Peer::Tcp { pid, .. } => *pid,
        }
    }

    /// The client as the history names one who answered an approval.
    pub fn describe(&self) -> String {
        let pid = self.pid().map_or("unknown".into(), |pid| pid.to_string());
        match self {
            Peer::Socket { uid, .. } => {
                let uid = uid.map_or("unknown".into(), |uid| uid.to_string());
                format!("a client on the API's socket (pid {pid}, uid {uid})")
            }
            Peer::Tcp { address, .. } => {
                format!("a client with the API's token from {address} (pid {pid})")
            }
        }
    }

    /// Why this client may not use the API, if it may not: it is one of a run's programs;
    /// or, on the socket, the kernel could not say which process it is, or that process (or
    /// a parent of it) is gone by now or cannot be read, so it cannot be told from the
    /// agent's programs (a program that connects and then leaves the connection to a child
    /// of its own as it exits). Decided once, as the connection starts.
    pub fn refusal(&self) -> Option<String> {
        let Some(pid) = self.pid() else {
            return match self {
                Peer::Socket { .. } => Some(
                    "the API cannot tell which process is on this connection (it is in another \
                     PID namespace), so it cannot tell it from the agent's programs"
                        .into(),
                ),
                // Another machine's, or another user's: the token is what admits it.
                Peer::Tcp { .. } => None,
            };
        };
        let under = match deskhand_engine::processes::kept_by(pid) {
            Holder::Nobody => return None,
            Holder::Unknown => {
                return Some(format!(
                    "the process on this connection (pid {pid}) or one of its parents has gone \
                     or cannot be read, so the API cannot tell it from the agent's programs"
                ));
            }
            Holder::Keeper(keeper) if keeper == std::process::id() => {
                "started by this service, its keeper gone".to_string()
            }
            Holder::Keeper(keeper) => format!("under keeper {keeper}"),
        };
        Some(format!(
            "this connection comes from a program Deskhand started for an agent's run (pid \
             {pid}, {under}): the agent's programs cannot use Deskhand's local API"
        ))
    }
}

/// What was decided about a connection's client as it started ([`Peer::refusal`]), which
/// every request on it carries: decided once, so that a client cannot pass by leaving the
/// connection to another process later.
#[derive(Clone, Debug)]
pub struct Admission {
    pub peer: Peer,
    pub refusal: Option<String>,
}

impl Admission {
    /// Judges `peer` now (reads `/proc`: blocking).
    pub fn of(peer: Peer) -> Self {
        let refusal = peer.refusal();
        Self { peer, refusal }
    }

    /// A connection whose judgement could not be made: refused.
    pub fn unjudged() -> Self {
        Self {
            peer: Peer::Socket {
                pid: None,
                uid: None,
            },
            refusal: Some("the API could not tell who is on this connection".into()),
        }
    }
}

/// An IPv4 address as itself, not mapped into IPv6 (a dual-stack listener's view of it).
fn canonical(address: SocketAddr) -> SocketAddr {
    match address.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), address.port()),
            None => address,
        },
        IpAddr::V4(_) => address,
    }
}

/// Whether a connection from `peer` to `local` comes from this machine: over loopback, or
/// from the machine's own address that it connected to.
fn is_from_this_machine(peer: SocketAddr, local: SocketAddr) -> bool {
    let peer = canonical(peer).ip();
    peer.is_loopback() || peer == canonical(local).ip()
}

/// The process on this machine holding the client end of a connection from `peer` to
/// `local`: its socket's inode from `/proc/net/tcp{,6}`, then the process with that
/// socket among its files. `None` when it is not this user's (or hides its files).
fn local_pid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let (peer, local) = (canonical(peer), canonical(local));
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            text.lines().skip(1).find_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (from, to) = (proc_address(fields.get(1)?)?, proc_address(fields.get(2)?)?);
                (from == peer && to == local).then(|| fields.get(9)?.parse::<u64>().ok())?
            })
        })?;
    let link = format!("socket:[{inode}]");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|process| {
            let pid: u32 = process.file_name().to_str()?.parse().ok()?;
            let files = std::fs::read_dir(process.path().join("fd")).ok()?;
            files
                .flatten()
                .any(|file| std::fs::read_link(file.path()).is_ok_and(|target| target == *link))
                .then_some(pid)
        })
}

/// An address as `/proc/net/tcp{,6}` writes it: the address's bytes as 32-bit words in host
/// order, in hex, then `:` and the port in hex.
fn proc_address(text: &str) -> Option<SocketAddr> {
    let (address, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let mut bytes = Vec::with_capacity(16);
    for word in address.as_bytes().chunks(8) {
        let word = u32::from_str_radix(std::str::from_utf8(word).ok()?, 16).ok()?;
        bytes.extend(word.to_ne_bytes());
    }
    let ip = match bytes.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
        _ => return None,
    };
    Some(canonical(SocketAddr::new(ip, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_endian = "little")]
    fn addresses_are_read_as_the_kernel_writes_them() {
        let v4 = proc_address("0100007F:1F90");
        assert_eq!(v4, Some("127.0.0.1:8080".parse().unwrap()));
        let v6 = proc_address("0000000000000000FFFF00000100007F:0050");
        assert_eq!(v6, Some("127.0.0.1:80".parse().unwrap()));
    }

    #[tokio::test]
    async fn a_loopback_client_is_found_by_its_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (_server_end, peer) = listener.accept().unwrap();
        assert_eq!(local_pid(peer, local), Some(std::process::id()));
        drop(client);
    }

    /// A client on this machine that connects to one of the machine's own non-loopback
    /// addresses (the API listening on all of them) is found as a loopback one is.
    #[tokio::test]
    async fn a_client_on_a_lan_address_of_this_machine_is_found() {
        // The address this machine would send from: connecting a UDP socket sends nothing.
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        let own = probe
            .connect("203.0.113.1:9")
            .or_else(|_| probe.connect("10.255.255.1:9"))
            .ok()
            .and_then(|()| probe.local_addr().ok())
            .map(|address| address.ip())
            .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
        let Some(own) = own else {
            eprintln!("skipped: this machine has no non-loopback address");
            return;
        };
        let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect((own, port)).unwrap();
        let (stream, address) = listener.accept().await.unwrap();
        assert_eq!(canonical(address).ip(), own);
        let peer = Peer::of_tcp(address, stream.local_addr().ok());
        assert_eq!(peer.pid(), Some(std::process::id()), "{peer:?}");
        drop(client);
    }

    #[test]
    fn a_client_whose_process_is_gone_is_refused_not_taken_for_the_persons() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = Peer::Socket {
            pid: Some(pid),
            uid: Some(0),
        };
        let refusal = gone.refusal().expect("refused");
        assert!(refusal.contains("has gone or cannot be read"), "{refusal}");
        let me = Peer::Socket {
            pid: Some(std::process::id()),
            uid: Some(0),
        };
        assert_eq!(me.refusal(), None);
    }
}
