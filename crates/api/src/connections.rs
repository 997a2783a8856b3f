//! The API's listeners, served by a connection loop of our own rather than `axum::serve`, so
//! that clients are bounded: a connection's request head must arrive within
//! [`HEADER_TIMEOUT`] (an idle connection that never sends one is closed), and each
//! listener holds at most [`MAX_CONNECTIONS`] connections, and on TCP at most
//! [`MAX_CONNECTIONS_PER_PEER`] from one address. A connection past a cap is answered 503
//! and closed at once, so idle clients cannot use up the service's file descriptors, and
//! the Unix socket, which has a budget of its own, keeps answering. Each connection's
//! client ([`Peer`]) is named and judged once, before its first request, and every request
//! carries that [`Admission`], so the router refuses the agent's own programs; a refused
//! connection is closed after its first answer.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;

use super::error::{ErrorBody, ErrorKind};
use super::peer::{Admission, Peer};

/// How long a client has to send a whole request head, from its connection or from its
/// last answer on a kept-alive one.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client has to send a request's body once its head arrived (read by the
/// routes, which take the body).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections one listener holds at once.
pub const MAX_CONNECTIONS: usize = 256;
/// The most TCP connections from one address at once.
pub const MAX_CONNECTIONS_PER_PEER: usize = 64;
/// How long to wait before accepting again after an accept failed (out of descriptors).
const ACCEPT_RETRY: Duration = Duration::from_millis(50);
/// The kernel's queue of connections not yet accepted: deep enough that a burst of them
/// waits there rather than having its handshakes dropped and retried a second later.
const LISTEN_BACKLOG: u32 = 4096;

/// A TCP listener on `address` with a deep accept queue ([`LISTEN_BACKLOG`]).
pub fn bind_tcp(address: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match address {
        std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// A listener the API serves.
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// Serves `router` on `listener` until `stop`; open connections are then asked to end.
pub async fn serve(listener: Listener, router: Router, stop: CancellationToken) {
    let budget = Arc::new(Budget::default());
    let refusal = refusal();
    loop {
        let accepted = tokio::select! {
            accepted = accept(&listener) => accepted,
            () = stop.cancelled() => return,
        };
        // A refusal is written without waiting (a new socket's buffer takes it whole) and
        // the connection closed, so a flood of connections costs no task each.
        match accepted {
            Ok(Accepted::Tcp(stream, address)) => {
                match Budget::admit(&budget, Some(address.ip())) {
                    Some(ticket) => {
                        // Naming a loopback client scans `/proc`: done at the first request,
                        // in the blocking pool, so an idle connection never costs it.
                        let local = stream.local_addr().ok();
                        let judge = move || Admission::of(Peer::of_tcp(address, local));
                        connection(stream, Box::new(judge), false, ticket, &router, &stop)
                    }
                    None => drop(stream.try_write(refusal.as_bytes())),
                }
            }
            Ok(Accepted::Unix(stream)) => match Budget::admit(&budget, None) {
                Some(ticket) => {
                    // The kernel names the process that connected; it is judged at once,
                    // while that process is there to be judged.
                    let peer = Peer::of_socket(&stream);
                    let judge = move || Admission::of(peer);
                    connection(stream, Box::new(judge), true, ticket, &router, &stop)
                }
                None => drop(stream.try_write(refusal.as_bytes())),
            },
            Err(_) => tokio::time::sleep(ACCEPT_RETRY).await,
        }
    }
}

enum Accepted {
    Tcp(tokio::net::TcpStream, SocketAddr),
    Unix(tokio::net::UnixStream),
}

async fn accept(listener: &Listener) -> std::io::Result<Accepted> {
    Ok(match listener {
        Listener::Tcp(tcp) => {
            let (stream, address) = tcp.accept().await?;
            Accepted::Tcp(stream, address)
        }
        Listener::Unix(unix) => Accepted::Unix(unix.accept().await?.0),
    })
}

/// How a connection's client is judged: once, by the first of the connection's start
/// (`eager`) or its first request; blocking (it reads `/proc`).
type Judge = Box<dyn FnOnce() -> Admission + Send>;

/// Serves one connection, holding its place in the budget until it ends. Every request on it
/// carries the connection's [`Admission`], judged once (`judge`).
fn connection<S>(
    io: S,
    judge: Judge,
    eager: bool,
    ticket: Ticket,
    router: &Router,
    stop: &CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let router = router.clone();
    let stop = stop.clone();
    tokio::spawn(async move {
        let _ticket = ticket;
        let verdict = Arc::new(Verdict {
            judged: tokio::sync::OnceCell::new(),
            judge: Mutex::new(Some(judge)),
        });
        if eager {
            verdict.get().await;
        }
        let router = router.layer(axum::middleware::from_fn(
            move |mut request: axum::extract::Request, next: axum::middleware::Next| {
                let verdict = verdict.clone();
                async move {
                    let admission = verdict.get().await;
                    request.extensions_mut().insert(admission);
                    next.run(request).await
                }
            },
        ));
        let service = TowerToHyperService::new(router);
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT);
        let connection = builder.serve_connection(TokioIo::new(io), service);
        let mut connection = std::pin::pin!(connection);
        tokio::select! {
            _ = connection.as_mut() => {}
            () = stop.cancelled() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    });
}

/// A connection's judgement, made once.
struct Verdict {
    judged: tokio::sync::OnceCell<Admission>,
    judge: Mutex<Option<Judge>>,
}

impl Verdict {
    async fn get(&self) -> Admission {
        self.judged
            .get_or_init(|| async {
                let judge = self.judge.lock().unwrap_or_else(|e| e.into_inner()).take();
                let judged = match judge {
                    Some(judge) => tokio::task::spawn_blocking(judge).await.ok(),
                    None => None,
                };
                judged.unwrap_or_else(Admission::unjudged)
            })
            .await
            .clone()
    }
}

/// The 503 a connection past the caps gets before it is closed.
fn refusal() -> String {
    let body = serde_json::to_string(&ErrorBody::new(
        ErrorKind::TooManyConnections,
        format!(
            "the service holds as many connections as it takes ({MAX_CONNECTIONS} per \
             listener, {MAX_CONNECTIONS_PER_PEER} per address); close some and try again"
        ),
    ))
    // A struct of strings always serialises.
    .unwrap_or_default();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         {}: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        deskhand_engine::delegate::API_VERSION_HEADER,
        deskhand_engine::delegate::API_VERSION,
        body.len()
    )
}

/// The connections a listener holds, in all and by peer address.
#[derive(Default)]
struct Budget {
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: usize,
    by_peer: HashMap<IpAddr, usize>,
}

impl Budget {
    /// A place for a connection from `peer`, given back when the ticket is dropped; `None`
    /// past a cap.
    fn admit(budget: &Arc<Self>, peer: Option<IpAddr>) -> Option<Ticket> {
        let mut held = budget.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.total >= MAX_CONNECTIONS {
            return None;
        }
        if let Some(peer) = peer {
            let from_peer = held.by_peer.entry(peer).or_default();
            if *from_peer >= MAX_CONNECTIONS_PER_PEER {
                return None;
            }
            *from_peer += 1;
        }
        held.total += 1;
        Some(Ticket {
            budget: budget.clone(),
            peer,
        })
    }
}

struct Ticket {
    budget: Arc<Budget>,
    peer: Option<IpAddr>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut held = self.budget.held.lock().unwrap_or_else(|e| e.into_inner());
        held.total -= 1;
        if let Some(peer) = self.peer
            && let Some(from_peer) = held.by_peer.get_mut(&peer)
        {
            *from_peer -= 1;
            if *from_peer == 0 {
                held.by_peer.remove(&peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_admitted_up_to_the_caps_and_given_back() {
        let budget = Arc::new(Budget::default());
        let one: IpAddr = "127.0.0.1".parse().unwrap();
        let two: IpAddr = "127.0.0.2".parse().unwrap();
        let from_one: Vec<_> = (0..MAX_CONNECTIONS_PER_PEER)
            .map(|_| Budget::admit(&budget, Some(one)).unwrap())
            .collect();
        assert!(Budget::admit(&budget, Some(one)).is_none());
        let others: Vec<_> = (MAX_CONNECTIONS_PER_PEER..MAX_CONNECTIONS)
            .map(|_| Budget::admit(&budget, None).unwrap())
            .collect();
        assert!(Budget::admit(&budget, Some(two)).is_none());
        drop(others);
        assert!(Budget::admit(&budget, Some(two)).is_some());
        drop(from_one);
        let held = budget.held.lock().unwrap();
        assert_eq!(held.total, 0);
        assert!(held.by_peer.is_empty());
    }
}
