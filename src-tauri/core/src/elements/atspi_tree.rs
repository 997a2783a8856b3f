//! The element map from AT-SPI, through the `atspi` crate: the whole tree of each app in one
//! `GetItems` call on its cache (4–6 ms for about 300 nodes), then the extents and text of
//! the showing nodes, fetched concurrently. Apps that answer `GetItems` with nothing (Qt)
//! are walked node by node, skipping subtrees that are not showing. Each app has
//! [`TREE_TIMEOUT`](super::TREE_TIMEOUT); one that hangs is left out with a note.
//!
//! It runs on zbus's own executor (async-io), so it is called from synchronous code too:
//! the approval gate's hit test happens in `Tool::plan`.

use std::collections::HashMap;
use std::sync::Mutex;

use atspi::proxy::accessible::AccessibleProxy;
use atspi::proxy::cache::CacheProxy;
use atspi::proxy::component::ComponentProxy;
use atspi::proxy::text::TextProxy;
use atspi::zbus::proxy::CacheProperties;
use atspi::{AccessibilityConnection, CoordType, Interface, InterfaceSet, Role, State, StateSet};
use futures_util::future::join_all;

use super::{
    Element, ElementError, ElementKey, MAX_NODES_PER_APP, Origin, Rect, Snapshot, TREE_TIMEOUT,
    Tree,
};

/// The most characters of an entry's or text view's content kept.
const MAX_TEXT_CHARS: i32 = 2_000;

/// Every app's root object.
const ROOT: &str = "/org/a11y/atspi/accessible/root";

/// A point query stops this many levels down; no real window is that deep.
const MAX_DEPTH: usize = 64;

/// A desktop's accessibility bus, connected on first use and kept.
#[derive(Default)]
pub struct AtspiTree {
    /// The desktop's session bus; `None` for the one this process was started with.
    session: Option<String>,
    connection: Mutex<Option<AccessibilityConnection>>,
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
async fn within<T>(limit: std::time::Duration, future: impl Future<Output = T>) -> Option<T> {
    futures_lite::future::or(async { Some(future.await) }, async {
        async_io::Timer::after(limit).await;
        None
    })
    .await
}

fn no_bus(e: impl std::fmt::Display) -> ElementError {
    ElementError::NoBus(e.to_string())
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
            connection: Mutex::default(),
        }
    }

    async fn connect(session: Option<&str>) -> Result<AccessibilityConnection, ElementError> {
        let Some(address) = session else {
            return AccessibilityConnection::new().await.map_err(no_bus);
        };
        let session = atspi::zbus::connection::Builder::address(address)
            .map_err(no_bus)?
            .build()
            .await
            .map_err(no_bus)?;
        let a11y = atspi::proxy::bus::BusProxy::new(&session)
            .await
            .map_err(no_bus)?
            .get_address()
            .await
            .map_err(no_bus)?;
        AccessibilityConnection::from_address(a11y.parse().map_err(no_bus)?)
            .await
            .map_err(no_bus)
    }

    fn connection(&self) -> Result<AccessibilityConnection, ElementError> {
        let mut slot = self.connection.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let connection =
            async_io::block_on(within(TREE_TIMEOUT, Self::connect(self.session.as_deref())))
                .ok_or(ElementError::Timeout)??;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// `read` run for every app (its bus name) at once, each within [`TREE_TIMEOUT`]: the
    /// answers, `None` for an app that did not answer in time.
    async fn each_app<T>(
        connection: &AccessibilityConnection,
        read: impl AsyncFn(&atspi::zbus::Connection, &str) -> T,
    ) -> Result<Vec<(String, Option<T>)>, ElementError> {
        let root = connection
            .root_accessible_on_registry()
            .await
            .map_err(no_bus)?;
        let apps = root.get_children().await.map_err(no_bus)?;
        let buses: Vec<String> = apps
            .iter()
            .filter_map(|app| Some(app.name_as_str()?.to_string()))
            .collect();
        let reads = buses.into_iter().map(async |bus| {
            let answer = within(TREE_TIMEOUT, read(connection.connection(), &bus)).await;
            (bus, answer)
        });
        Ok(join_all(reads).await)
    }

    async fn read(connection: &AccessibilityConnection) -> Result<Snapshot, ElementError> {
        let mut snapshot = Snapshot::default();
        for (bus, result) in Self::each_app(connection, read_app).await? {
            match result {
                Some(Ok((elements, note))) => {
                    snapshot.elements.extend(elements);
                    snapshot.notes.extend(note);
                }
                Some(Err(e)) => snapshot
                    .notes
                    .push(format!("the app at {bus} gave no tree: {e}")),
                None => snapshot.notes.push(format!(
                    "the app at {bus} did not answer within {} ms and is left out",
                    TREE_TIMEOUT.as_millis()
                )),
            }
        }
        Ok(snapshot)
    }

    async fn read_at(
        connection: &AccessibilityConnection,
        x: i32,
        y: i32,
    ) -> Result<Option<Element>, ElementError> {
        let found = Self::each_app(connection, async |conn, bus| app_at(conn, bus, x, y).await);
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
        read: impl AsyncFnOnce(&AccessibilityConnection) -> Result<T, ElementError>,
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
        self.ask(Self::read)
    }

    fn at(&self, x: i32, y: i32) -> Result<Option<Element>, ElementError> {
        self.ask(async |connection| Self::read_at(connection, x, y).await)
    }
}

/// A proxy of interface `P` on object `path` of `bus`, without property caching (each read
/// is one call, and there are no signals to watch).
async fn proxy<'a, P>(
    conn: &'a atspi::zbus::Connection,
    bus: &str,
    path: &str,
) -> zbus_result::Result<P>
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
    conn: &'a atspi::zbus::Connection,
    bus: &str,
    path: &str,
) -> zbus_result::Result<AccessibleProxy<'a>> {
    proxy(conn, bus, path).await
}

mod zbus_result {
    pub type Result<T> = std::result::Result<T, atspi::zbus::Error>;
}

/// One app's showing elements, and a note when its tree was cut at the cap.
async fn read_app(
    conn: &atspi::zbus::Connection,
    bus: &str,
) -> zbus_result::Result<(Vec<Element>, Option<String>)> {
    let root = accessible(conn, bus, ROOT).await?;
    let app_name = root.name().await.unwrap_or_default();
    let cache = CacheProxy::builder(conn)
        .destination(bus.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await?;
    let mut nodes: Vec<Node> = match cache.get_items().await {
        Ok(items) => items
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
            .collect(),
        Err(_) => Vec::new(),
    };
    let mut note = None;
    if nodes.is_empty() {
        let (walked, cut) = walk(conn, bus).await?;
        nodes = walked;
        if cut {
            note = Some(format!(
                "{app_name}: the tree has more than {MAX_NODES_PER_APP} nodes; only the first were read"
            ));
        }
    } else if nodes.len() > MAX_NODES_PER_APP {
        nodes.truncate(MAX_NODES_PER_APP);
        note = Some(format!(
            "{app_name}: the tree has more than {MAX_NODES_PER_APP} nodes; only the first were read"
        ));
    }
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
    Ok((elements, note))
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
    conn: &atspi::zbus::Connection,
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
        while chain.len() < MAX_DEPTH {
            let component: ComponentProxy =
                proxy(conn, bus, chain.last().expect("not empty")).await?;
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
            chain.push(path);
        }
        let deepest = join_all(
            chain
                .iter()
                .rev()
                .map(|path| node_at(conn, bus, path, x, y)),
        )
        .await;
        let found = deepest.into_iter().flatten().find(|(node, _)| {
            !matches!(
                role_name(node.role),
                "frame" | "window" | "filler" | "panel"
            )
        });
        if let Some((node, bounds)) = found
            && best
                .as_ref()
                .is_none_or(|b| bounds.area() < b.bounds.area())
        {
            best = Some(element(&node, bounds, None, &app, Some(&window.0)));
        }
    }
    Ok(best)
}

/// The node at `path` with its bounds, if it is showing and its bounds hold the point.
async fn node_at(
    conn: &atspi::zbus::Connection,
    bus: &str,
    path: &str,
    x: i32,
    y: i32,
) -> Option<(Node, Rect)> {
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
async fn details(conn: &atspi::zbus::Connection, node: &Node) -> (Option<Rect>, Option<String>) {
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

/// The node-by-node walk for apps whose cache answers nothing (Qt 5): breadth first from the
/// app's root, not entering subtrees that are not showing, at most [`MAX_NODES_PER_APP`]
/// nodes. Says whether it stopped at the cap.
async fn walk(conn: &atspi::zbus::Connection, bus: &str) -> zbus_result::Result<(Vec<Node>, bool)> {
    let mut nodes = Vec::new();
    let mut level = vec![(ROOT.to_string(), String::new())];
    while !level.is_empty() {
        let reads = level.iter().map(|(path, parent)| async move {
            let proxy = accessible(conn, bus, path).await.ok()?;
            let (role, name, states, ifaces, children) = futures_util::join!(
                proxy.get_role(),
                proxy.name(),
                proxy.get_state(),
                proxy.get_interfaces(),
                proxy.get_children()
            );
            let node = Node {
                bus: bus.to_string(),
                path: path.clone(),
                parent: parent.clone(),
                role: role.ok()?,
                name: name.unwrap_or_default(),
                states: states.ok()?,
                ifaces: ifaces.unwrap_or_default(),
            };
            Some((node, children.unwrap_or_default()))
        });
        let mut next = Vec::new();
        for (node, children) in join_all(reads).await.into_iter().flatten() {
            // The app's root is not showing itself; its windows are.
            let enter = node.role == Role::Application || node.states.contains(State::Showing);
            if enter {
                next.extend(
                    children
                        .iter()
                        .map(|c| (c.path_as_str().to_string(), node.path.clone())),
                );
            }
            nodes.push(node);
            if nodes.len() >= MAX_NODES_PER_APP {
                return Ok((nodes, true));
            }
        }
        level = next;
    }
    Ok((nodes, false))
}
