//! The schedule routes: add, list, show (with its runs summed up), pause, resume, delete and
//! run now. `deskhand schedule` is their client; the daemon's scheduler runs what they add.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use super::error::{ApiError, ErrorKind};
use super::openapi::Operation;
use super::routes::{Api, Route, body, path_id};
use deskhand_engine::schedules::{
    Schedule, ScheduleError, ScheduleReport, ScheduleSpec, Schedules,
};
use deskhand_engine::store::StoreError;
use deskhand_engine::tasks::TaskInfo;

pub(crate) fn routes() -> Vec<Route> {
    let one = |operation: Operation| {
        operation
            .refuses(400, "A path that cannot be read.")
            .refuses(404, "No such schedule (by id or name).")
    };
    vec![
        Route::new(
            Method::GET,
            "/v1/schedules",
            list,
            Operation::new("listSchedules", "Every schedule, by name.")
                .answers::<ScheduleList>(200, "The schedules."),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules",
            add,
            Operation::new(
                "addSchedule",
                "Add a schedule; `deskhand serve` runs it at its times. A malformed cron \
                 expression, an unknown time zone, a time that has passed or an approval \
                 deadline out of range is refused, and nothing is scheduled.",
            )
            .body::<ScheduleSpec>(true)
            .answers::<Schedule>(201, "The schedule, with its next due time.")
            .refuses(400, "A malformed body or a schedule that cannot work.")
            .refuses(409, "exists: a schedule has that name."),
        ),
        Route::new(
            Method::GET,
            "/v1/schedules/{id}",
            show,
            one(Operation::new(
                "getSchedule",
                "A schedule, its newest runs and every run's outcome counted.",
            )
            .answers::<ScheduleReport>(200, "The schedule.")),
        ),
        Route::new(
            Method::DELETE,
            "/v1/schedules/{id}",
            delete,
            one(Operation::new(
                "deleteSchedule",
                "Delete a schedule (its runs' tasks and sessions stay).",
            )
            .answers::<Schedule>(200, "The schedule as it was.")),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules/{id}/pause",
            pause,
            one(Operation::new(
                "pauseSchedule",
                "Pause a schedule: nothing runs until it is resumed.",
            )
            .answers::<Schedule>(200, "The schedule.")),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules/{id}/resume",
            resume,
            one(Operation::new(
                "resumeSchedule",
                "Resume a schedule from now (the times missed while paused do not run) and \
                 forget its failures in a row.",
            )
            .answers::<Schedule>(200, "The schedule.")),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules/{id}/run",
            run_now,
            one(
                Operation::new("runSchedule", "Run a schedule now, outside its times.")
                    .answers::<TaskInfo>(202, "The run's task.")
                    .refuses(
                        409,
                        "busy: its run is still going and its overlap policy is not cancel.",
                    ),
            ),
        ),
    ]
}

#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
struct ScheduleList {
    schedules: Vec<Schedule>,
}

fn schedules(api: &Api) -> Result<&Schedules, ApiError> {
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

async fn list(State(api): State<Api>) -> Result<Json<ScheduleList>, ApiError> {
    Ok(Json(ScheduleList {
        schedules: schedules(&api)?.list()?,
    }))
}

async fn add(State(api): State<Api>, bytes: Bytes) -> Result<Response, ApiError> {
    let spec: ScheduleSpec = body(&bytes)?;
    let schedule = schedules(&api)?.add(spec)?;
    Ok((StatusCode::CREATED, Json(schedule)).into_response())
}

async fn show(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<ScheduleReport>, ApiError> {
    Ok(Json(schedules(&api)?.report(&path_id(id)?)?))
}

async fn delete(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(schedules(&api)?.delete(&path_id(id)?)?))
}

async fn pause(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(schedules(&api)?.pause(&path_id(id)?)?))
}

async fn resume(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(schedules(&api)?.resume(&path_id(id)?)?))
}

async fn run_now(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let task = schedules(&api)?.run_now(&path_id(id)?).await?;
    Ok((StatusCode::ACCEPTED, Json(api.engine.task(&task)?)).into_response())
}
