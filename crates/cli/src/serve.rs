//! `deskhand serve`: the task engine as a local API (see `docs/api.md`).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use deskhand_api as api;
use deskhand_engine::schedules::{EngineLauncher, Scheduler, SystemClock};
use deskhand_engine::secrets::OsKeyring;
use deskhand_engine::store::Store;
use deskhand_engine::tasks::Engine;

use crate::service::ServiceArgs;

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    service: ServiceArgs,
    /// Also listen on this TCP address (e.g. 127.0.0.1:8765); every request there needs the
    /// bearer token.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// A host name (or address) the TCP listener answers to besides the loopback ones and
    /// its own address: what clients write in its URL. Repeatable, or comma-separated in
    /// $DESKHAND_ALLOW_HOST.
    #[arg(
        long,
        value_name = "HOST",
        requires = "listen",
        env = "DESKHAND_ALLOW_HOST",
        value_delimiter = ','
    )]
    allow_host: Vec<String>,
    /// A browser origin (e.g. https://example.org) whose pages may call the TCP listener;
    /// by default any request with an `Origin` header is refused. Repeatable, or
    /// comma-separated in $DESKHAND_ALLOW_ORIGIN.
    #[arg(
        long,
        value_name = "ORIGIN",
        requires = "listen",
        env = "DESKHAND_ALLOW_ORIGIN",
        value_delimiter = ','
    )]
    allow_origin: Vec<String>,
    /// Print the TCP listener's bearer token (made and stored in the keyring if there is
    /// none) and exit.
    #[arg(long)]
    print_token: bool,
    /// Write a systemd user unit that runs `deskhand serve` (restarting it on failure) and
    /// enable it with `systemctl --user`, then exit.
    #[arg(long, conflicts_with = "print_token")]
    install: bool,
}

pub async fn run(args: ServeArgs) -> Result<()> {
    if args.print_token {
        let token = tokio::task::spawn_blocking(|| api::api_token(&OsKeyring::default())).await??;
        println!("{}", token.expose());
        return Ok(());
    }
    if args.install {
        return crate::install::install(&args.service, args.listen);
    }
    // What a run's program leaves behind when it kills its keeper comes here, where the
    // API still knows it for the agent's.
    deskhand_engine::processes::adopt_orphans();
    let store = Store::open_default(args.service.data_dir.clone())?;
    let engine = Engine::new(store.clone());
    let (scheduler, schedules) = Scheduler::new(
        store,
        Arc::new(SystemClock),
        Arc::new(EngineLauncher::new(engine.clone())),
    );
    let (listener, socket) = api::bind_socket(&args.service.socket_path())?;
    eprintln!("deskhand: serving on {}", socket.path.display());
    let stop = tokio_util::sync::CancellationToken::new();
    let mut servers = tokio::task::JoinSet::new();
    if let Some(address) = args.listen {
        let token = tokio::task::spawn_blocking(|| api::api_token(&OsKeyring::default()))
            .await?
            .context("the TCP listener needs its bearer token from the keyring")?;
        let listener =
            api::bind_tcp(address).with_context(|| format!("cannot listen on {address}"))?;
        if !address.ip().is_loopback() {
            eprintln!(
                "deskhand: warning: {address} is reachable from other machines and the API \
                 speaks plain HTTP: the bearer token crosses the network unencrypted"
            );
        }
        eprintln!(
            "deskhand: serving on http://{} (bearer token: `deskhand serve --print-token`)",
            listener.local_addr()?
        );
        let mut hosts = args.allow_host;
        hosts.push(listener.local_addr()?.ip().to_string());
        let access = api::TcpAccess {
            token,
            hosts,
            origins: args.allow_origin,
        };
        let router =
            api::router_with_schedules(engine.clone(), Some(schedules.clone()), Some(access));
        servers.spawn(api::serve(
            api::Listener::Tcp(listener),
            router,
            stop.clone(),
        ));
    }
    servers.spawn(api::serve(
        api::Listener::Unix(listener),
        api::router_with_schedules(engine.clone(), Some(schedules), None),
        stop.clone(),
    ));
    let stop_scheduling = tokio_util::sync::CancellationToken::new();
    let scheduling = tokio::spawn(scheduler.run(stop_scheduling.clone()));
    shutdown_signal().await;
    eprintln!("deskhand: stopping: cancelling running tasks");
    // No new scheduled run starts while the others stop.
    stop_scheduling.cancel();
    let _ = scheduling.await;
    for task in engine.running() {
        let _ = engine.cancel(&task.id);
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !engine.running().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    stop.cancel();
    // Open event streams end with the server; do not wait for them.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), servers.join_all()).await;
    drop(socket);
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}
