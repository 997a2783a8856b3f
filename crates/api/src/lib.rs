//! `deskhand serve`: the task engine as a local HTTP API with Server-Sent Events. By default
//! it listens on a Unix socket only this user can open; TCP (`--listen`) requires a bearer
//! token that lives in the OS keyring with the API keys. The routes are documented in
//! `docs/api.md` and in `docs/openapi.json`, which [`openapi()`] generates from the route table.

mod access;
mod connections;
mod error;
mod openapi;
mod peer;
mod routes;
mod schedules;
mod socket;
mod tcp;

pub use access::{API_TOKEN, api_token};
pub use connections::{
    BODY_TIMEOUT, HEADER_TIMEOUT, Listener, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_PEER, bind_tcp,
    serve,
};
pub use peer::Peer;
pub use routes::{MAX_WATCHERS_PER_TASK, openapi, router, router_with_schedules};
pub use socket::{ServeError, SocketFile, bind_socket, default_socket_path};
pub use tcp::TcpAccess;
