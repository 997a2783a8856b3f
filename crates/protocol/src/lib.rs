//! Deskhand's protocol: the types every part speaks and every front end receives (events,
//! messages, approvals, plans, tasks, sessions), with their wire formats. No I/O and no async,
//! so that the store, the engine, the API and the window share one definition of each: the
//! window's TypeScript (ts-rs) and the local API's schemas in docs/openapi.json (schemars) are
//! generated from here.

pub mod action;
pub mod approval;
pub mod budget;
pub mod check;
pub mod desktop;
pub mod emphasis;
pub mod error_kind;
pub mod event;
pub mod history;
pub mod ids;
pub mod images;
pub mod json_depth;
pub mod message;
pub mod note;
pub mod plan;
pub mod provenance;
pub mod scaling;
pub mod schedule;
pub mod session;
pub mod stall;
pub mod status;
pub mod task;
pub mod update;
pub mod visible;
