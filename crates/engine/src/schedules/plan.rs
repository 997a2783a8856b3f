//! When a schedule is due: pure functions of its trigger, the last due time dealt with and
//! the time now (Unix milliseconds), so that catch-up, DST and clock jumps are tested on a
//! fake clock. Cron times are read in the schedule's IANA time zone by `croner` over
//! `jiff`, which handle DST: a time skipped by spring forward runs at the first instant after
//! the gap, a time that happens twice in fall back runs once.

use std::str::FromStr;

use croner::Cron;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::ScheduleError;
use deskhand_protocol::schedule::{CatchUp, Trigger};

/// How late a due time may be and still count as on time for [`CatchUp::Skip`].
pub const ON_TIME_MS: i64 = 60_000;

/// The shortest `every`.
pub const MIN_EVERY_SECS: u64 = 1;

/// A trigger read once: its cron expression parsed and its time zone found.
#[derive(Clone, Debug)]
pub enum Timing {
    Cron(Box<Cron>, TimeZone),
    Every { ms: i64 },
    At(i64),
}

impl Timing {
    /// Reads a trigger; a malformed cron expression, an unknown time zone, an `every` of
    /// less than a second or an `at` that is not RFC 3339 is an error.
    pub fn new(trigger: &Trigger) -> Result<Self, ScheduleError> {
        match trigger {
            Trigger::Cron { expr, tz } => {
                if expr.split_whitespace().count() != 5 {
                    return Err(ScheduleError::Cron {
                        expr: expr.clone(),
                        reason: "a cron expression has five fields: minute hour \
                                 day-of-month month day-of-week"
                            .into(),
                    });
                }
                let cron = Cron::from_str(expr).map_err(|e| ScheduleError::Cron {
                    expr: expr.clone(),
                    reason: e.to_string(),
                })?;
                let zone = TimeZone::get(tz).map_err(|e| ScheduleError::TimeZone {
                    tz: tz.clone(),
                    reason: e.to_string(),
                })?;
                Ok(Self::Cron(Box::new(cron), zone))
            }
            Trigger::Every { seconds } => {
                if *seconds < MIN_EVERY_SECS {
                    return Err(ScheduleError::Invalid(
                        "`every` must be at least one second".into(),
                    ));
                }
                let ms = i64::try_from(seconds.saturating_mul(1000))
                    .map_err(|_| ScheduleError::Invalid("`every` is too long".into()))?;
                Ok(Self::Every { ms })
            }
            Trigger::At { at } => {
                let time: Timestamp = at.parse().map_err(|e| {
                    ScheduleError::Invalid(format!("`at` {at:?} is not an RFC 3339 time: {e}"))
                })?;
                Ok(Self::At(time.as_millisecond()))
            }
        }
    }

    /// The first due time strictly after `after`; `anchor` is when the schedule was made,
    /// which an `every` counts from.
    pub fn next_after(&self, after: i64, anchor: i64) -> Option<i64> {
        match self {
            Self::Cron(cron, zone) => {
                let from = zoned(after, zone)?;
                let next = cron.find_next_occurrence(&from, false).ok()?;
                Some(next.timestamp().as_millisecond())
            }
            Self::Every { ms } => {
                let steps = if after < anchor {
                    1
                } else {
                    (after - anchor) / ms + 1
                };
                anchor.checked_add(steps.checked_mul(*ms)?)
            }
            Self::At(at) => (*at > after).then_some(*at),
        }
    }

    /// The last due time at or before `now` (none before the first, after `anchor`).
    fn latest_upto(&self, now: i64, anchor: i64) -> Option<i64> {
        match self {
            Self::Cron(cron, zone) => {
                let upto = zoned(now, zone)?;
                let latest = cron.find_previous_occurrence(&upto, true).ok()?;
                Some(latest.timestamp().as_millisecond())
            }
            Self::Every { ms } => {
                let steps = now.checked_sub(anchor)? / ms;
                (steps >= 1).then(|| anchor + steps * ms)
            }
            Self::At(at) => (*at <= now).then_some(*at),
        }
    }

    /// The due time before `due`.
    fn previous(&self, due: i64) -> Option<i64> {
        match self {
            Self::Cron(cron, zone) => {
                let from = zoned(due, zone)?;
                let previous = cron.find_previous_occurrence(&from, false).ok()?;
                Some(previous.timestamp().as_millisecond())
            }
            Self::Every { ms } => due.checked_sub(*ms),
            Self::At(_) => None,
        }
    }
}

fn zoned(ms: i64, zone: &TimeZone) -> Option<jiff::Zoned> {
    Some(Timestamp::from_millisecond(ms).ok()?.to_zoned(zone.clone()))
}

/// What to do now for a schedule that is due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    /// The due times to run, oldest first (empty: the missed ones are skipped).
    pub fires: Vec<i64>,
    /// The newest due time dealt with: stored, so none at or before it runs again.
    pub last_due: i64,
    /// The next due time after it.
    pub next_due: Option<i64>,
}

/// Whether a schedule is due at `now`, given the last due time dealt with (`None`: none
/// yet, counted from `anchor`), and which of the due times since then run under `catch_up`.
/// A clock set back finds nothing due until it passes `last_due` again, so no due time runs
/// twice.
pub fn due(
    timing: &Timing,
    catch_up: CatchUp,
    last_due: Option<i64>,
    anchor: i64,
    now: i64,
) -> Option<Due> {
    let from = last_due.unwrap_or(anchor);
    let first = timing.next_after(from, anchor)?;
    if first > now {
        return None;
    }
    let latest = timing.latest_upto(now, anchor)?.max(first);
    let fires = match catch_up {
        CatchUp::Once => vec![latest],
        CatchUp::Skip if now - latest <= ON_TIME_MS => vec![latest],
        CatchUp::Skip => Vec::new(),
        CatchUp::Each(max) => {
            let mut fires = vec![latest];
            while fires.len() < max as usize {
                match fires.last().and_then(|&due| timing.previous(due)) {
                    Some(previous) if previous > from && previous >= first => fires.push(previous),
                    _ => break,
                }
            }
            fires.reverse();
            fires
        }
    };
    Some(Due {
        fires,
        last_due: latest,
        next_due: timing.next_after(latest, anchor),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    const MIN: i64 = 60_000;
    const HOUR: i64 = 60 * MIN;

    fn every(seconds: u64) -> Timing {
        Timing::new(&Trigger::Every { seconds }).unwrap()
    }

    fn cron(expr: &str, tz: &str) -> Timing {
        Timing::new(&Trigger::Cron {
            expr: expr.into(),
            tz: tz.into(),
        })
        .unwrap()
    }

    fn at(tz: &str, y: i16, m: i8, d: i8, h: i8, min: i8) -> i64 {
        date(y, m, d)
            .at(h, min, 0, 0)
            .to_zoned(TimeZone::get(tz).unwrap())
            .unwrap()
            .timestamp()
            .as_millisecond()
    }

    /// Walks a schedule as the daemon would, with each due time fired at once: the times it
    /// ran between `start` and `end`.
    fn fired(timing: &Timing, start: i64, end: i64) -> Vec<i64> {
        let mut last = None;
        let mut now = start;
        let mut runs = Vec::new();
        while now <= end {
            match due(timing, CatchUp::Once, last, start, now) {
                Some(d) => {
                    runs.extend(&d.fires);
                    last = Some(d.last_due);
                }
                None => {
                    now = match timing.next_after(last.unwrap_or(start), start) {
                        Some(next) => next,
                        None => break,
                    }
                }
            }
        }
        runs
    }

    #[test]
    fn nothing_is_due_before_the_first_time() {
        let t = every(3600);
        assert_eq!(due(&t, CatchUp::Once, None, 0, HOUR - 1), None);
        let d = due(&t, CatchUp::Once, None, 0, HOUR).unwrap();
        assert_eq!(d.fires, vec![HOUR]);
        assert_eq!(d.next_due, Some(2 * HOUR));
        assert_eq!(due(&t, CatchUp::Once, Some(HOUR), 0, HOUR + 5), None);
    }

    #[test]
    fn catch_up_once_runs_one_for_all_the_missed() {
        let t = every(3600);
        // Down from just after the first run until 5.5 hours later: 4 missed.
        let d = due(&t, CatchUp::Once, Some(HOUR), 0, 5 * HOUR + 30 * MIN).unwrap();
        assert_eq!(d.fires, vec![5 * HOUR]);
        assert_eq!(d.last_due, 5 * HOUR);
        assert_eq!(d.next_due, Some(6 * HOUR));
    }

    #[test]
    fn catch_up_skip_runs_only_what_is_due_now() {
        let t = every(3600);
        let late = due(&t, CatchUp::Skip, Some(HOUR), 0, 5 * HOUR + 30 * MIN).unwrap();
        assert_eq!(late.fires, Vec::<i64>::new());
        assert_eq!(late.last_due, 5 * HOUR, "the missed ones are dealt with");
        let on_time = due(&t, CatchUp::Skip, Some(HOUR), 0, 5 * HOUR + 500).unwrap();
        assert_eq!(on_time.fires, vec![5 * HOUR]);
    }

    #[test]
    fn catch_up_each_runs_the_newest_n_in_order() {
        let t = every(3600);
        let d = due(&t, CatchUp::Each(3), Some(HOUR), 0, 5 * HOUR + 30 * MIN).unwrap();
        assert_eq!(d.fires, vec![3 * HOUR, 4 * HOUR, 5 * HOUR]);
        let few = due(&t, CatchUp::Each(10), Some(HOUR), 0, 3 * HOUR).unwrap();
        assert_eq!(few.fires, vec![2 * HOUR, 3 * HOUR], "only the missed ones");
        let never_ran = due(&t, CatchUp::Each(10), None, 0, 2 * HOUR).unwrap();
        assert_eq!(never_ran.fires, vec![HOUR, 2 * HOUR]);
    }

    #[test]
    fn a_clock_set_back_runs_nothing_twice() {
        let t = every(60);
        let d = due(&t, CatchUp::Once, None, 0, 10 * MIN).unwrap();
        assert_eq!(d.fires, vec![10 * MIN]);
        // The clock goes back an hour, then forward again past the fired time.
        for now in [10 * MIN - HOUR, 0, 5 * MIN, 10 * MIN, 10 * MIN + 59_999] {
            assert_eq!(
                due(&t, CatchUp::Once, Some(d.last_due), 0, now),
                None,
                "at {now}"
            );
        }
        let next = due(&t, CatchUp::Once, Some(d.last_due), 0, 11 * MIN).unwrap();
        assert_eq!(next.fires, vec![11 * MIN]);
    }

    #[test]
    fn a_clock_jumping_forward_follows_the_catch_up_policy() {
        let t = cron("*/5 * * * *", "UTC");
        let start = at("UTC", 2026, 1, 5, 9, 0);
        let d = due(&t, CatchUp::Each(2), Some(start), start, start + 3 * HOUR).unwrap();
        assert_eq!(d.fires, vec![start + 3 * HOUR - 5 * MIN, start + 3 * HOUR]);
    }

    #[test]
    fn cron_follows_the_local_time_across_spring_forward() {
        let tz = "America/New_York";
        let t = cron("0 9 * * *", tz);
        // 2026-03-08 is the spring forward in New York: 09:00 stays 09:00 local.
        let start = at(tz, 2026, 3, 6, 12, 0);
        let runs = fired(&t, start, at(tz, 2026, 3, 10, 12, 0));
        let expected: Vec<_> = (7..=10).map(|d| at(tz, 2026, 3, d, 9, 0)).collect();
        assert_eq!(runs, expected);
        assert_eq!(runs[1] - runs[0], 23 * HOUR, "the short day");
    }

    #[test]
    fn a_time_skipped_by_spring_forward_runs_once_after_the_gap() {
        let tz = "America/New_York";
        let t = cron("30 2 * * *", tz);
        let start = at(tz, 2026, 3, 7, 12, 0);
        let runs = fired(&t, start, at(tz, 2026, 3, 9, 12, 0));
        assert_eq!(runs.len(), 2, "{runs:?}");
        // 02:30 does not exist on the 8th: it runs at 03:00 (07:00 UTC).
        assert_eq!(runs[0], at("UTC", 2026, 3, 8, 7, 0));
        assert_eq!(runs[1], at(tz, 2026, 3, 9, 2, 30));
    }

    #[test]
    fn a_time_repeated_by_fall_back_runs_once() {
        let tz = "America/New_York";
        let t = cron("30 1 * * *", tz);
        let start = at(tz, 2026, 10, 31, 12, 0);
        let runs = fired(&t, start, at(tz, 2026, 11, 2, 12, 0));
        assert_eq!(runs.len(), 2, "{runs:?}");
        // 01:30 happens twice on 2026-11-01: the first one (EDT, 05:30 UTC) runs.
        assert_eq!(runs[0], at("UTC", 2026, 11, 1, 5, 30));
        // With the clock set back one hour by fall back, nothing runs again.
        assert_eq!(
            due(&t, CatchUp::Once, Some(runs[0]), start, runs[0] + HOUR),
            None
        );
    }

    #[test]
    fn an_at_runs_once() {
        let t = Timing::new(&Trigger::At {
            at: "2026-05-01T09:00:00Z".into(),
        })
        .unwrap();
        let when = at("UTC", 2026, 5, 1, 9, 0);
        assert_eq!(due(&t, CatchUp::Once, None, 0, when - 1), None);
        let d = due(&t, CatchUp::Once, None, 0, when + 5 * HOUR).unwrap();
        assert_eq!(d.fires, vec![when]);
        assert_eq!(d.next_due, None);
        assert_eq!(due(&t, CatchUp::Once, Some(when), 0, when + 9 * HOUR), None);
    }

    #[test]
    fn bad_triggers_are_clear_errors() {
        let bad = |trigger: Trigger| Timing::new(&trigger).unwrap_err().to_string();
        let message = bad(Trigger::Cron {
            expr: "61 9 * * *".into(),
            tz: "UTC".into(),
        });
        assert!(message.contains("61 9 * * *"), "{message}");
        let message = bad(Trigger::Cron {
            expr: "0 9 * *".into(),
            tz: "UTC".into(),
        });
        assert!(message.contains("five fields"), "{message}");
        let message = bad(Trigger::Cron {
            expr: "0 9 * * *".into(),
            tz: "Mars/Olympus".into(),
        });
        assert!(message.contains("Mars/Olympus"), "{message}");
        assert!(bad(Trigger::Every { seconds: 0 }).contains("at least one second"));
        assert!(
            bad(Trigger::At {
                at: "tomorrow".into()
            })
            .contains("RFC 3339")
        );
    }
}
