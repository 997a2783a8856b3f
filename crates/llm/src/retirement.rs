//! When models stop being served, as their vendors announced it, so that a run on a model past
//! its date warns before it starts instead of failing with a bare `not_found` midway.

/// One announced retirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retirement {
    /// The model id's prefix (dated ids share their family's date).
    pub model: &'static str,
    /// `YYYY-MM-DD`, UTC.
    pub date: &'static str,
    /// `false` when the vendor said only "possible from" this date. Such a date is treated as
    /// the retirement itself: from then on the model may go any day, so a run warns; none is
    /// refused, since the service's own answer decides whether it still serves the model.
    pub certain: bool,
    /// The current model to move to.
    pub successor: &'static str,
}

/// Every announced date (late 2026, `../shared/reference/anthropic-computer-use.md`).
pub const RETIREMENTS: [Retirement; 1] = [Retirement {
    model: "claude-opus-4-5",
    date: "2026-11-24",
    certain: false,
    successor: "claude-opus-5-5",
}];

/// The warning for a run on `model` on day `today` (days since 1970-01-01, UTC), if the
/// model is past its retirement date.
pub fn warning(model: &str, today: i64) -> Option<String> {
    let id = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
        .replace('.', "-");
    let retirement = RETIREMENTS.iter().find(|r| id.starts_with(r.model))?;
    if today < days_of(retirement.date)? {
        return None;
    }
    let when = if retirement.certain {
        format!("was retired on {}", retirement.date)
    } else {
        format!("may be retired any day since {}", retirement.date)
    };
    Some(format!(
        "{model} {when}: requests may fail with not_found; {} is its successor",
        retirement.successor
    ))
}

/// Today, in days since 1970-01-01 (UTC).
pub fn today() -> i64 {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (seconds / 86_400) as i64
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (the proleptic Gregorian calendar).
fn days_of(date: &str) -> Option<i64> {
    let mut parts = date.split('-').map(str::parse::<i64>);
    let (y, m, d) = (
        parts.next()?.ok()?,
        parts.next()?.ok()?,
        parts.next()?.ok()?,
    );
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_warns_from_its_possible_retirement_date_on() {
        assert_eq!(days_of("1970-01-01"), Some(0));
        assert_eq!(days_of("2000-03-01"), Some(11_017));
        let date = days_of("2026-11-24").unwrap();
        assert_eq!(warning("claude-opus-4-5-20251101", date - 1), None);
        let said = warning("claude-opus-4-5-20251101", date).unwrap();
        assert!(
            said.contains("may be retired any day since 2026-11-24"),
            "{said}"
        );
        assert!(said.contains("claude-opus-5-5"), "{said}");
        assert!(warning("anthropic/claude-opus-4.5", date + 300).is_some());
        assert_eq!(warning("claude-opus-4-6", date + 300), None);
        assert_eq!(warning("claude-opus-5-5", date + 300), None);
    }
}
