//! The element map from AT-SPI, through the `atspi` crate: the whole tree of each app in one
//! `GetItems` call on its cache where the app has one, then the extents and text of the
//! showing nodes, fetched concurrently. Apps that answer `GetItems` with nothing or an error
//! (Qt 5; GTK 3 on a plain connection, see [`AtspiTree::connect`]) are walked level by level,
//! skipping subtrees that are not showing. All apps together have
//! [`TREE_TIMEOUT`](super::TREE_TIMEOUT), and an app that does not answer in time is left out,
//! named by its process. `GetItems` is one call that cannot stop early (docs/benchmarks.md
//! has how long GTK takes for a large tree), so such an app is
//! walked until a walk finds its tree small; a walk that takes half the time stops there and
//! keeps the top of the tree.
//!
//! It runs on zbus's own executor (async-io), so it is called from synchronous code too:
//! the approval gate's hit test happens in `Tool::plan`.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use atspi::proxy::accessible::AccessibleProxy;
use atspi::proxy::cache::CacheProxy;
use atspi::proxy::component::ComponentProxy;
use atspi::proxy::text::TextProxy;
use atspi::zbus::Connection;
use atspi::zbus::proxy::CacheProperties;
use atspi::{AccessibilityConnection, CoordType, Interface, InterfaceSet, Role, State, StateSet};
use futures_util::future::join_all;

use super::{
    Element, ElementError, ElementKey, MAX_NODES_PER_APP, Origin, Rect, Snapshot, TREE_TIMEOUT,
    Tree, is_container,
};

/// The most characters of an entry's or text view's content kept.
const MAX_TEXT_CHARS: i32 = 2_000;

/// Every app's root object; the registry's lists the apps.
const ROOT: &str = "/org/a11y/atspi/accessible/root";

/// The registry's bus name on the accessibility bus.
const REGISTRY: &str = "org.a11y.atspi.Registry";

/// A point query stops this many levels down; no real window is that deep.
const MAX_DEPTH: usize = 64;

/// A tree this small answers `GetItems` well within [`TREE_TIMEOUT`]: an app walked because
/// it was slow once goes back to `GetItems` when a walk finds its tree this small.
const SMALL_TREE: usize = 1_000;

/// The most nodes a walk asks about at once: a level of thousands is read in batches, with
/// the deadline checked between them.
const WALK_BATCH: usize = 256;

/// A desktop's accessibility bus, connected on first use and kept.
#[derive(Default)]
pub struct AtspiTree {
    /// The desktop's session bus; `None` for the one this process was started with.
    session: Option<String>,
    /// The desktop's accessibility bus itself, when it is known (an agent desktop's).
    accessibility: Option<String>,
    connection: Mutex<Option<Link>>,
    /// Apps (bus names, which are never reused) that did not answer in time: they are walked,
    /// which can stop early with part of the tree, rather than asked for all of it at once.
    walked: Mutex<HashSet<String>>,
}

/// A connection to the accessibility bus, and `atspi`'s own on it when that came up (kept
/// for as long as the connection is used).
#[derive(Clone)]
struct Link {
    bus: Connection,
    _atspi: Option<AccessibilityConnection>,
}

/// One node as read from an app, before its extents are known.
struct Node {
    bus: String,
    path: String,
    parent: String,
    role: Role,
    name: String,
    states: StateSet,
    ifaces: InterfaceSet,
}

/// Races `future` against `limit`; `None` when the time ran out.
pub(super) async fn within<T>(limit: Duration, future: impl Future<Output = T>) -> Option<T> {
    until(Instant::now() + limit, future).await
}

/// Races `future` against `deadline`; `None` when it passed.
async fn until<T>(deadline: Instant, future: impl Future<Output = T>) -> Option<T> {
    futures_lite::future::or(async { Some(future.await) }, async {
        async_io::Timer::at(deadline).await;
        None
    })
    .await
}

fn no_bus(e: impl std::fmt::Display) -> ElementError {
    ElementError::NoBus(e.to_string())
}

/// The address of the accessibility bus of the session bus at `session` (this process's
/// with `None`), which starts it if it is not running yet.
pub async fn accessibility_bus(session: Option<&str>) -> Result<String, ElementError> {
    let builder = match session {
        Some(address) => atspi::zbus::connection::Builder::address(address).map_err(no_bus)?,
        None => atspi::zbus::connection::Builder::session().map_err(no_bus)?,
    };
    let session = builder.build().await.map_err(no_bus)?;
    atspi::proxy::bus::BusProxy::new(&session)
        .await
        .map_err(no_bus)?
        .get_address()
        .await
        .map_err(no_bus)
}

/// Whether the accessibility bus at `address` has its registry yet (an agent desktop starts
/// it with the bus, and waits for it).
pub async fn has_registry(address: &str) -> Result<bool, ElementError> {
    let bus = atspi::zbus::connection::Builder::address(address)
        .map_err(no_bus)?
        .build()
        .await
        .map_err(no_bus)?;
    let name = atspi::zbus::names::BusName::try_from(REGISTRY).map_err(no_bus)?;
    atspi::zbus::fdo::DBusProxy::new(&bus)
        .await
        .map_err(no_bus)?
        .name_has_owner(name)
        .await
        .map_err(no_bus)
}

impl AtspiTree {
    /// The tree of the person's desktop (this process's session bus).
    pub fn new() -> Self {
        Self::default()
    }

    /// The tree of a private desktop whose session bus is at `address`
    /// ([`DesktopBus::address`](super::bus::DesktopBus::address)).
    pub fn on_bus(address: &str) -> Self {
        Self {
            session: Some(address.to_string()),
            ..Self::default()
        }
    }

    /// The tree on the accessibility bus at `address` itself (an agent desktop's).
    pub fn on_accessibility_bus(address: &str) -> Self {
        Self {
            accessibility: Some(address.to_string()),
            ..Self::default()
        }
    }

    /// A connection to the accessibility bus: `atspi`'s, with which GTK 3 apps answer
    /// `GetItems` (a plain connection gets only the slower walk; docs/benchmarks.md), or a
    /// plain one when that does not come up in time: building it waits on the registry,
    /// which waits on an app that hangs.
    async fn connect(
        session: Option<&str>,
        accessibility: Option<&str>,
    ) -> Result<Link, ElementError> {
        let a11y = match (accessibility, session, std::env::var("AT_SPI_BUS_ADDRESS")) {
            (Some(address), _, _) => address.to_string(),
            (None, Some(address), _) => accessibility_bus(Some(address)).await?,
            // The standard override, which the apps on this desktop honour too.
            (None, None, Ok(address)) => address,
            (None, None, Err(_)) => accessibility_bus(None).await?,
        };
        let address: atspi::zbus::Address = a11y.parse().map_err(no_bus)?;
        let full = AccessibilityConnection::from_address(address.clone());
        if let Some(full) = within(TREE_TIMEOUT / 2, full).await {
            let full = full.map_err(no_bus)?;
            return Ok(Link {
                bus: full.connection().clone(),
                _atspi: Some(full),
            });
        }
        let bus = atspi::zbus::connection::Builder::address(address)
            .map_err(no_bus)?
            .build()
            .await
            .map_err(no_bus)?;
        Ok(Link { bus, _atspi: None })
    }

    fn walked(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.walked.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn connection(&self) -> Result<Connection, ElementError> {
        let mut slot = self.connection.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(link) = slot.as_ref() {
            return Ok(link.bus.clone());
        }
        let connection = async_io::block_on(within(
            TREE_TIMEOUT,
            Self::connect(self.session.as_deref(), self.accessibility.as_deref()),
        ))
        .ok_or(ElementError::Timeout)??;
        let bus = connection.bus.clone();
        *slot = Some(connection);
        Ok(bus)
    }

    /// `read` run for every app (its bus name) at once, all within [`TREE_TIMEOUT`] of
    /// `started`: the answers, `None` for an app that did not answer in time. `read` is given
    /// the deadline, so that a slow one can stop early with what it has.
    async fn each_app<T>(
        connection: &Connection,
        started: Instant,
        read: impl AsyncFn(&Connection, &str, Instant) -> T,
    ) -> Result<Vec<(String, Option<T>)>, ElementError> {
        let root = accessible(connection, REGISTRY, ROOT)
            .await
            .map_err(no_bus)?;
        let apps = root.get_children().await.map_err(no_bus)?;
        let buses = apps
            .iter()
            .filter_map(|app| Some(app.name_as_str()?.to_string()));
        let own = join_all(
            buses
                .clone()
                .map(async |bus| is_own_app(connection, &bus).await),
        )
        .await;
        let buses: Vec<String> = buses
            .zip(own)
            .filter(|(_, own)| !own)
            .map(|(b, _)| b)
            .collect();
        let deadline = started + TREE_TIMEOUT;
        let reads = buses.into_iter().map(async |bus| {
            let answer = until(deadline, read(connection, &bus, deadline)).await;
            (bus, answer)
        });
        Ok(join_all(reads).await)
    }

    async fn read(&self, connection: &Connection) -> Result<Snapshot, ElementError> {
        let started = Instant::now();
        let walked = self.walked().clone();
        let read = async |conn: &Connection, bus: &str, deadline| {
            read_app(conn, bus, deadline, walked.contains(bus)).await
        };
        let mut snapshot = Snapshot::default();
        for (bus, result) in Self::each_app(connection, started, read).await? {
            match result {
                Some(Ok((elements, note, nodes))) => {
                    // A tree read whole and small was slow for another reason (the app was
                    // starting): `GetItems` again, which is faster.
                    if note.is_none() && nodes <= SMALL_TREE {
                        self.walked().remove(&bus);
                    }
                    snapshot.elements.extend(elements);
                    snapshot.notes.extend(note);
                }
                Some(Err(e)) => snapshot
                    .notes
                    .push(format!("the app at {bus} gave no tree: {e}")),
                None => {
                    let who = process_of(connection, &bus).await;
                    self.walked().insert(bus.clone());
                    snapshot.notes.push(format!(
                        "the app at {bus}{who} did not answer within {} ms and is left out",
                        TREE_TIMEOUT.as_millis()
                    ));
                }
            }
        }
        Ok(snapshot)
    }

    async fn read_at(
        connection: &Connection,
        x: i32,
        y: i32,
    ) -> Result<Option<Element>, ElementError> {
        let found = Self::each_app(connection, Instant::now(), async |conn, bus, _| {
            app_at(conn, bus, x, y).await
        });
        Ok(found
            .await?
            .into_iter()
            .filter_map(|(_, read)| read?.ok().flatten())
            .min_by_key(|e| e.bounds.area()))
    }

    /// Runs `read` on the connection within the tree's timeout, and drops the connection when
    /// the bus fails (a desktop restarted) so that the next call connects again.
    fn ask<T>(
        &self,
        read: impl AsyncFnOnce(&Connection) -> Result<T, ElementError>,
    ) -> Result<T, ElementError> {
        let connection = self.connection()?;
        match async_io::block_on(within(TREE_TIMEOUT + TREE_TIMEOUT / 5, read(&connection))) {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(e)) => {
                *self.connection.lock().unwrap_or_else(|e| e.into_inner()) = None;
                Err(e)
            }
            None => Err(ElementError::Timeout),
        }
    }
}

impl Tree for AtspiTree {
    fn snapshot(&self) -> Result<Snapshot, ElementError> {
        self.ask(async |connection| self.read(connection).await)
    }

    fn at(&self, x: i32, y: i32) -> Result<Option<Element>, ElementError> {
        self.ask(async |connection| Self::read_at(connection, x, y).await)
    }
}

/// A proxy of interface `P` on object `path` of `bus`, without property caching (each read
/// is one call, and there are no signals to watch).
async fn proxy<'a, P>(conn: &'a Connection, bus: &str, path: &str) -> zbus_result::Result<P>
where
    P: From<atspi::zbus::Proxy<'a>> + atspi::zbus::proxy::Defaults,
{
    atspi::zbus::proxy::Builder::<P>::new(conn)
        .destination(bus.to_string())?
        .path(path.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

async fn accessible<'a>(
    conn: &'a Connection,
    bus: &str,
    path: &str,
) -> zbus_result::Result<AccessibleProxy<'a>> {
    proxy(conn, bus, path).await
}

mod zbus_result {
    pub type Result<T> = std::result::Result<T, atspi::zbus::Error>;
}

/// The process behind the bus name `bus`, as the bus daemon knows it.
async fn pid_of(conn: &Connection, bus: &str) -> Option<u32> {
    within(TREE_TIMEOUT / 10, async {
        let name = atspi::zbus::names::BusName::try_from(bus).ok()?;
        let daemon = atspi::zbus::fdo::DBusProxy::new(conn).await.ok()?;
        daemon.get_connection_unix_process_id(name).await.ok()
    })
    .await
    .flatten()
}

/// Whether the app at `bus` is Deskhand itself: this process, or the web process WebKit
/// starts for its window. Its windows and dialogs are never a target (an approval card's
/// Approve must not be what the agent clicks). Other children of this process are the
/// person's or the agent's apps, and stay.
async fn is_own_app(conn: &Connection, bus: &str) -> bool {
    let Some(pid) = pid_of(conn, bus).await else {
        return false;
    };
    let own = std::process::id();
    pid == own
        || deskhand_host::processes::name_and_parent(pid)
            .is_some_and(|(name, parent)| parent == own && name.starts_with("WebKit"))
}

/// " (firefox, pid 4242)": the process behind the bus name `bus`, which the bus daemon
/// knows even when the app itself does not answer; empty if that is unknown too.
async fn process_of(conn: &Connection, bus: &str) -> String {
    let Some(pid) = pid_of(conn, bus).await else {
        return String::new();
    };
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(command) => format!(" ({}, pid {pid})", command.trim_end()),
        Err(_) => format!(" (pid {pid})"),
    }
}

/// Where a walk left part of the tree unread.
#[derive(Debug, PartialEq)]
enum Cut {
    /// It stopped at [`MAX_NODES_PER_APP`].
    Cap,
    /// It stopped at its share of the deadline.
    Time,
    /// It read only the first [`WALK_BATCH`] children of a container this wide.
    Wide { role: &'static str, children: usize },
}

/// One app's showing elements, a note when its tree was cut, and how many nodes were read.
/// `deadline` is for the
/// whole read: a walk stops at half the time left, so that the extents of what it read can
/// still be fetched. With `walk_only`, the app's cache is not asked.
async fn read_app(
    conn: &Connection,
    bus: &str,
    deadline: Instant,
    walk_only: bool,
) -> zbus_result::Result<(Vec<Element>, Option<String>, usize)> {
    let root = accessible(conn, bus, ROOT).await?;
    let app_name = root.name().await.unwrap_or_default();
    let items = if walk_only {
        Vec::new()
    } else {
        let cache = CacheProxy::builder(conn)
            .destination(bus.to_string())?
            .cache_properties(CacheProperties::No)
            .build()
            .await?;
        cache.get_items().await.unwrap_or_default()
    };
    let mut nodes: Vec<Node> = items
        .into_iter()
        .map(|item| Node {
            bus: bus.to_string(),
            path: item.object.path_as_str().to_string(),
            parent: item.parent.path_as_str().to_string(),
            role: item.role,
            // atspi-common 0.14 puts the accessible name in `short_name`.
            name: if item.short_name.is_empty() {
                item.name
            } else {
                item.short_name
            },
            states: item.states,
            ifaces: item.ifaces,
        })
        .collect();
    let mut cut = None;
    if nodes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        (nodes, cut) = walk(conn, bus, Instant::now() + left / 2).await?;
    } else if nodes.len() > MAX_NODES_PER_APP {
        nodes.truncate(MAX_NODES_PER_APP);
        cut = Some(Cut::Cap);
    }
    let note = cut.map(|cut| match cut {
        Cut::Cap => format!(
            "{app_name}: the tree has more than {MAX_NODES_PER_APP} nodes; only the first {MAX_NODES_PER_APP} were read"
        ),
        Cut::Time => format!(
            "{app_name}: the tree is too large to read in time; only the first {} nodes were read",
            nodes.len()
        ),
        Cut::Wide { role, children } => format!(
            "{app_name}: a {role} has {children} children; only the first {WALK_BATCH} were read"
        ),
    });
    let by_path: HashMap<&str, &Node> = nodes.iter().map(|n| (n.path.as_str(), n)).collect();
    let showing: Vec<&Node> = nodes
        .iter()
        .filter(|n| n.states.contains(State::Showing) && n.ifaces.contains(Interface::Component))
        .collect();
    let details = join_all(showing.iter().map(|n| details(conn, n))).await;
    let mut elements = Vec::new();
    for (node, (bounds, text)) in showing.iter().zip(details) {
        let Some(bounds) = bounds else { continue };
        if bounds.width <= 0 || bounds.height <= 0 {
            continue;
        }
        let window = window_of(node, &by_path);
        elements.push(element(node, bounds, text, &app_name, window));
    }
    Ok((elements, note, nodes.len()))
}

/// The element of a showing `node`, in `window`, of the app named `app`.
fn element(
    node: &Node,
    bounds: Rect,
    text: Option<String>,
    app: &str,
    window: Option<&Node>,
) -> Element {
    Element {
        key: ElementKey::Object {
            bus: node.bus.clone(),
            path: node.path.clone(),
        },
        role: role_name(node.role).to_string(),
        name: node.name.clone(),
        text,
        states: node
            .states
            .iter()
            .filter(|s| INTERESTING_STATES.contains(s))
            .map(|s| s.to_static_str().to_string())
            .collect(),
        bounds,
        app: app.to_string(),
        window: window.map(|w| w.name.clone()).unwrap_or_default(),
        focused_window: window.is_some_and(|w| w.states.contains(State::Active)),
        origin: Origin::Tree,
    }
}

/// What a click at the desktop point (`x`, `y`) touches in the app at `bus`: its windows that
/// are showing and hold the point, each asked for the child at the point, down to the deepest.
/// Of each chain the deepest node that is not a container counts, as in [`Snapshot::at`]; of
/// several windows, the smallest such node. Its text is not read.
async fn app_at(
    conn: &Connection,
    bus: &str,
    x: i32,
    y: i32,
) -> zbus_result::Result<Option<Element>> {
    let root = accessible(conn, bus, ROOT).await?;
    let (app, windows) = futures_util::join!(root.name(), root.get_children());
    let app = app.unwrap_or_default();
    let windows = join_all(
        windows?
            .iter()
            .map(|w| node_at(conn, bus, w.path_as_str(), x, y)),
    )
    .await;
    let mut best: Option<Element> = None;
    for window in windows.into_iter().flatten() {
        let mut chain = vec![window.0.path.clone()];
        let mut last = window.0.path.clone();
        while chain.len() < MAX_DEPTH {
            let component: ComponentProxy = proxy(conn, bus, &last).await?;
            let child = component
                .get_accessible_at_point(x, y, CoordType::Screen)
                .await?;
            if child.is_null() || child.name_as_str().is_some_and(|b| b != bus) {
                break;
            }
            let path = child.path_as_str().to_string();
            if chain.contains(&path) {
                break;
            }
            last.clone_from(&path);
            chain.push(path);
        }
        // The window itself was read above; only what is below it is read now.
        let deepest = join_all(
            chain[1..]
                .iter()
                .rev()
                .map(|path| node_at(conn, bus, path, x, y)),
        )
        .await;
        let found = deepest
            .iter()
            .flatten()
            .chain([&window])
            .find(|(node, _)| !is_container(role_name(node.role)));
        if let Some((node, bounds)) = found
            && best
                .as_ref()
                .is_none_or(|b| bounds.area() < b.bounds.area())
        {
            best = Some(element(node, *bounds, None, &app, Some(&window.0)));
        }
    }
    Ok(best)
}

/// The node at `path` with its bounds, if it is showing and its bounds hold the point.
async fn node_at(conn: &Connection, bus: &str, path: &str, x: i32, y: i32) -> Option<(Node, Rect)> {
    let (node, component) = futures_util::join!(
        accessible(conn, bus, path),
        proxy::<ComponentProxy>(conn, bus, path)
    );
    let (node, component) = (node.ok()?, component.ok()?);
    let (role, name, states, extents) = futures_util::join!(
        node.get_role(),
        node.name(),
        node.get_state(),
        component.get_extents(CoordType::Screen)
    );
    let (x0, y0, width, height) = extents.ok()?;
    let bounds = Rect {
        x: x0,
        y: y0,
        width,
        height,
    };
    let states = states.ok()?;
    (states.contains(State::Showing) && bounds.contains(x, y)).then(|| {
        let node = Node {
            bus: bus.to_string(),
            path: path.to_string(),
            parent: String::new(),
            role: role.unwrap_or(Role::Invalid),
            name: name.unwrap_or_default(),
            states,
            ifaces: InterfaceSet::empty(),
        };
        (node, bounds)
    })
}

/// AT-SPI's own role name (its `GetRoleName`); the crate says "button" for a push button.
fn role_name(role: Role) -> &'static str {
    match role {
        Role::Button => "push button",
        other => other.name(),
    }
}

/// States worth telling the model; the rest (showing, visible, ...) every element has.
const INTERESTING_STATES: &[State] = &[
    State::Focused,
    State::Checked,
    State::Pressed,
    State::Selected,
    State::Expanded,
    State::Editable,
];

/// The frame, window or dialog a node is in.
fn window_of<'a>(node: &'a Node, by_path: &HashMap<&str, &'a Node>) -> Option<&'a Node> {
    let mut current = node;
    for _ in 0..256 {
        if matches!(
            current.role,
            Role::Frame | Role::Window | Role::Dialog | Role::Alert | Role::FileChooser
        ) {
            return Some(current);
        }
        current = by_path.get(current.parent.as_str())?;
    }
    None
}

/// A node's bounds on the desktop and, for text that is not a password, its content.
async fn details(conn: &Connection, node: &Node) -> (Option<Rect>, Option<String>) {
    let bounds = async {
        let component: ComponentProxy = proxy(conn, &node.bus, &node.path).await.ok()?;
        let (x, y, width, height) = component.get_extents(CoordType::Screen).await.ok()?;
        Some(Rect {
            x,
            y,
            width,
            height,
        })
    };
    let text = async {
        // A password's content never leaves the app.
        if !node.ifaces.contains(Interface::Text) || node.role == Role::PasswordText {
            return None;
        }
        if !matches!(
            node.role,
            Role::Entry | Role::Text | Role::Paragraph | Role::SpinButton | Role::ComboBox
        ) && !node.states.contains(State::Editable)
        {
            return None;
        }
        let text: TextProxy = proxy(conn, &node.bus, &node.path).await.ok()?;
        let count = text.character_count().await.ok()?;
        text.get_text(0, count.min(MAX_TEXT_CHARS)).await.ok()
    };
    futures_util::join!(bounds, text)
}

/// The node-by-node walk for apps whose cache answers nothing or too slowly: breadth first
/// from the app's root, at most [`MAX_NODES_PER_APP`] nodes, and [`WALK_BATCH`] steps at a
/// time until `deadline`. It does not enter subtrees that are not showing, nor a table that
/// manages its descendants (100,000 rows made on demand; the hit test finds the one at a
/// point), and reads only the first [`WALK_BATCH`] children of a wider container. Those are
/// fetched one by one, so they come after the other nodes of their depth: a long list does
/// not hold back the buttons beside it on a slow bus. Says where it stopped early.
async fn walk(
    conn: &Connection,
    bus: &str,
    deadline: Instant,
) -> zbus_result::Result<(Vec<Node>, Option<Cut>)> {
    let mut nodes = Vec::new();
    let mut cut = None;
    let mut level = vec![Step::Read(ROOT.to_string(), String::new())];
    let mut next = Vec::new();
    let mut next_wide = Vec::new();
    while !level.is_empty() {
        if Instant::now() >= deadline {
            return Ok((nodes, Some(Cut::Time)));
        }
        let batch: Vec<_> = level.drain(..level.len().min(WALK_BATCH)).collect();
        for read in join_all(batch.iter().map(|step| step.take(conn, bus))).await {
            match read {
                Some(Taken::Node(node, children)) => {
                    match children {
                        Children::Listed(paths) => {
                            next.extend(paths.into_iter().map(|c| Step::Read(c, node.path.clone())))
                        }
                        Children::Wide(count) => {
                            cut = Some(Cut::Wide {
                                role: role_name(node.role),
                                children: count,
                            });
                            next_wide.push(Step::Expand(node.path.clone()));
                        }
                    }
                    nodes.push(node);
                    if nodes.len() >= MAX_NODES_PER_APP {
                        return Ok((nodes, Some(Cut::Cap)));
                    }
                }
                Some(Taken::Expanded(parent, paths)) => {
                    level.extend(paths.into_iter().map(|c| Step::Read(c, parent.clone())))
                }
                None => {}
            }
        }
        if level.is_empty() {
            level = std::mem::take(&mut next);
            level.append(&mut next_wide);
        }
    }
    Ok((nodes, cut))
}

/// One step of a [`walk`]: read the node at a path (its parent's path beside it), or fetch
/// the first [`WALK_BATCH`] children of a wide container.
enum Step {
    Read(String, String),
    Expand(String),
}

/// What a [`Step`] brought back.
enum Taken {
    Node(Node, Children),
    /// A wide container's path and the paths of its first children.
    Expanded(String, Vec<String>),
}

/// The children of a node a walk read: their paths, or for a container wider than
/// [`WALK_BATCH`] only how many it has (fetched later by a [`Step::Expand`]).
enum Children {
    Listed(Vec<String>),
    Wide(usize),
}

impl Step {
    async fn take(&self, conn: &Connection, bus: &str) -> Option<Taken> {
        match self {
            Step::Read(path, parent) => {
                let (node, children) = walk_node(conn, bus, path, parent).await?;
                Some(Taken::Node(node, children))
            }
            Step::Expand(path) => {
                let proxy = accessible(conn, bus, path).await.ok()?;
                let first = (0..WALK_BATCH as i32).map(|i| proxy.get_child_at_index(i));
                let paths = join_all(first)
                    .await
                    .into_iter()
                    .flatten()
                    .map(|c| c.path_as_str().to_string())
                    .collect();
                Some(Taken::Expanded(path.clone(), paths))
            }
        }
    }
}

/// One node of a [`walk`] and its children.
async fn walk_node(
    conn: &Connection,
    bus: &str,
    path: &str,
    parent: &str,
) -> Option<(Node, Children)> {
    let proxy = accessible(conn, bus, path).await.ok()?;
    let (role, name, states, ifaces, count) = futures_util::join!(
        proxy.get_role(),
        proxy.name(),
        proxy.get_state(),
        proxy.get_interfaces(),
        proxy.child_count()
    );
    let node = Node {
        bus: bus.to_string(),
        path: path.to_string(),
        parent: parent.to_string(),
        role: role.ok()?,
        name: name.unwrap_or_default(),
        states: states.ok()?,
        ifaces: ifaces.unwrap_or_default(),
    };
    // The app's root is not showing itself; its windows are.
    let enter = (node.role == Role::Application || node.states.contains(State::Showing))
        && !node.states.contains(State::ManagesDescendants);
    let count = usize::try_from(count.unwrap_or(0)).unwrap_or(0);
    if !enter || count == 0 {
        return Some((node, Children::Listed(Vec::new())));
    }
    if count > WALK_BATCH {
        return Some((node, Children::Wide(count)));
    }
    let paths = proxy
        .get_children()
        .await
        .unwrap_or_default()
        .iter()
        .map(|c| c.path_as_str().to_string())
        .collect();
    Some((node, Children::Listed(paths)))
}
