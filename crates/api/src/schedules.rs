//! The schedule routes' handlers (the route table, with their docs, is `routes`'s): add,
//! list, show (with its runs summed up), pause, resume, delete and run now. `deskhand
//! schedule` is their client; the daemon's scheduler runs what they add.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use super::error::{ApiError, ErrorKind, body, path_id};
use deskhand_engine::schedules::{
    Schedule, ScheduleError, ScheduleReport, ScheduleSpec, Schedules,
};
use deskhand_engine::store::StoreError;
use deskhand_engine::tasks::Engine;

/// What the schedule routes see of the API.
#[derive(Clone)]
pub(crate) struct ScheduleApi {
    pub(crate) engine: Engine,
    /// The daemon's schedules; `None` where nothing runs them (an embedder's router).
    pub(crate) schedules: Option<Schedules>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct ScheduleList {
    schedules: Vec<Schedule>,
}

fn schedules(api: &ScheduleApi) -> Result<&Schedules, ApiError> {
    api.schedules.as_ref().ok_or_else(|| ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        kind: ErrorKind::Internal,
        message: "this server does not run schedules".into(),
    })
}

impl From<ScheduleError> for ApiError {
    fn from(error: ScheduleError) -> Self {
        let (status, kind) = match &error {
            ScheduleError::Cron { .. }
            | ScheduleError::TimeZone { .. }
            | ScheduleError::Invalid(_) => (StatusCode::BAD_REQUEST, ErrorKind::Invalid),
            ScheduleError::NotFound(_) => (StatusCode::NOT_FOUND, ErrorKind::NotFound),
            ScheduleError::Store(StoreError::ScheduleNameTaken(_)) => {
                (StatusCode::CONFLICT, ErrorKind::Exists)
            }
            ScheduleError::Busy(_) => (StatusCode::CONFLICT, ErrorKind::Busy),
            ScheduleError::Task(_) | ScheduleError::Store(_) | ScheduleError::Stopped => {
                (StatusCode::INTERNAL_SERVER_ERROR, ErrorKind::Internal)
            }
        };
        if let ScheduleError::Task(task) = error {
            return task.into();
        }
        Self {
            status,
            kind,
            message: error.to_string(),
        }
    }
}

pub(crate) async fn list(State(api): State<ScheduleApi>) -> Result<Json<ScheduleList>, ApiError> {
    Ok(Json(ScheduleList {
        schedules: schedules(&api)?.list()?,
    }))
}

pub(crate) async fn add(
    State(api): State<ScheduleApi>,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let spec: ScheduleSpec = body(&bytes)?;
    let schedule = schedules(&api)?.add(spec)?;
    Ok((StatusCode::CREATED, Json(schedule)).into_response())
}

pub(crate) async fn show(
    State(api): State<ScheduleApi>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<ScheduleReport>, ApiError> {
    Ok(Json(schedules(&api)?.report(&path_id(id)?)?))
}

pub(crate) async fn delete(
    State(api): State<ScheduleApi>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(schedules(&api)?.delete(&path_id(id)?)?))
}

pub(crate) async fn pause(
    State(api): State<ScheduleApi>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(schedules(&api)?.pause(&path_id(id)?)?))
}

pub(crate) async fn resume(
    State(api): State<ScheduleApi>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(schedules(&api)?.resume(&path_id(id)?)?))
}

pub(crate) async fn run_now(
    State(api): State<ScheduleApi>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let task = schedules(&api)?.run_now(&path_id(id)?).await?;
    Ok((StatusCode::ACCEPTED, Json(api.engine.task(&task)?)).into_response())
}
