//! What the API's TCP listener asks of every request, which the Unix socket (guarded by the
//! file system) does not: a `Host` that names this machine's loopback or a name it was
//! given, no browser `Origin` unless allowed, and the bearer token.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorKind};
use deskhand_engine::secrets::ApiKey;

/// What the TCP listener requires of a request: the bearer token, a `Host` that names this
/// machine's loopback or one of `hosts`, and no `Origin` unless it is one of `origins`. A
/// web page the person visits can reach a loopback port (by DNS rebinding, or by a simple
/// request that needs no preflight); these checks refuse it.
pub struct TcpAccess {
    pub token: ApiKey,
    /// Host names (or addresses) besides the loopback ones, as a client writes them in the
    /// URL: the listener's own address, and what `--allow-host` adds.
    pub hosts: Vec<String>,
    /// Browser origins allowed (`--allow-origin`), e.g. `https://example.org`.
    pub origins: Vec<String>,
}

/// Refuses a request whose `Host` is not this machine's loopback or a configured name, and
/// one from a browser page (`Origin`) not configured.
async fn check_host_and_origin(access: Arc<TcpAccess>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !host_allowed(host, &access.hosts) {
        return ApiError {
            status: StatusCode::MISDIRECTED_REQUEST,
            kind: ErrorKind::WrongHost,
            message: format!(
                "this listener answers requests to a loopback name or one it was given \
                 (`--allow-host`), not to `{host}`"
            ),
        }
        .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !access.origins.iter().any(|allowed| allowed == origin) {
            return ApiError {
                status: StatusCode::FORBIDDEN,
                kind: ErrorKind::ForbiddenOrigin,
                message: format!(
                    "requests from web pages are refused (this one came from `{origin}`); \
                     allow an origin with `--allow-origin`"
                ),
            }
            .into_response();
        }
    }
    next.run(request).await
}

/// Whether a `Host` header names a loopback address, `localhost`, or one of `hosts`, with
/// any port.
fn host_allowed(host: &str, hosts: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        // `[::1]:8765`
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    }
    .to_ascii_lowercase();
    if name.is_empty() {
        return false;
    }
    let loopback = name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback
        || hosts.iter().any(|allowed| {
            let allowed = allowed.trim_start_matches('[').trim_end_matches(']');
            allowed.eq_ignore_ascii_case(&name)
        })
}

/// Refuses a request without the token, saying only that one is needed.
async fn authorize(access: Arc<TcpAccess>, request: Request, next: Next) -> Response {
    let token = &access.token;
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default();
    if constant_time_eq(given.as_bytes(), token.expose().as_bytes()) {
        return next.run(request).await;
    }
    let mut response = ApiError {
        status: StatusCode::UNAUTHORIZED,
        kind: ErrorKind::Unauthorized,
        message: "this listener requires the API's bearer token (`deskhand serve --print-token`)"
            .into(),
    }
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// Compares without stopping at the first difference, so timing tells nothing of the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `routes` behind the TCP listener's checks: the host and origin first, then the token.
pub(super) fn guarded(routes: Router, access: TcpAccess) -> Router {
    let access = Arc::new(access);
    let token = access.clone();
    routes
        .layer(middleware::from_fn(move |request, next| {
            authorize(token.clone(), request, next)
        }))
        .layer(middleware::from_fn(move |request, next| {
            check_host_and_origin(access.clone(), request, next)
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_a_loopback_name_or_a_given_one_with_any_port() {
        let given = ["deskhand.lan".to_string(), "10.0.0.5".to_string()];
        for allowed in [
            "localhost",
            "LOCALHOST:8765",
            "127.0.0.1:1",
            "127.3.2.1",
            "[::1]:8765",
            "[::1]",
            "deskhand.lan",
            "Deskhand.LAN:80",
            "10.0.0.5:7733",
        ] {
            assert!(host_allowed(allowed, &given), "{allowed}");
        }
        for refused in [
            "",
            ":8765",
            "attacker.example",
            "localhost.attacker.example:8765",
            "10.0.0.6:7733",
            "[::2]:8765",
            "deskhand.lan.attacker.example",
        ] {
            assert!(!host_allowed(refused, &given), "{refused}");
        }
    }
}
