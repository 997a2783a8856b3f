//! Capped exponential backoff with jitter, honouring the server's `retry-after`.

use std::time::Duration;

use super::ProviderError;

/// The default idle timeout. Services send pings or comments while the model thinks, so
/// silence this long means a stuck server or network; a model that thinks for minutes still
/// streams those keep-alives, and a shorter wait would cut off long, slow answers.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// How long a response may go without a byte before it counts as broken (and is retried).
    pub idle_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

impl RetryPolicy {
    /// How long to wait before retry number `attempt` (0-based) after `error`, or `None`
    /// when the error is final or the retries are used up.
    pub fn delay_before_retry(&self, attempt: u32, error: &ProviderError) -> Option<Duration> {
        if attempt >= self.max_retries || !error.is_retryable() {
            return None;
        }
        if let Some(after) = error.retry_after {
            // The server knows best, but a minute-long stall looks like a hang.
            return Some(after.min(Duration::from_secs(60)));
        }
        let exponential = self.base_delay.saturating_mul(1 << attempt.min(16));
        let capped = exponential.min(self.max_delay);
        // Full jitter in [50%, 100%] keeps clients that failed together from retrying together.
        let factor = 0.5 + rand::random::<f64>() * 0.5;
        Some(capped.mul_f64(factor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn error(kind: ErrorKind) -> ProviderError {
        ProviderError::new("test", kind, "x")
    }

    #[test]
    fn backs_off_exponentially_within_the_cap_and_stops() {
        let policy = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            ..RetryPolicy::default()
        };
        let overloaded = error(ErrorKind::Overloaded);
        for (attempt, full) in [(0, 100), (1, 200), (2, 300), (3, 300)] {
            let delay = policy.delay_before_retry(attempt, &overloaded).unwrap();
            assert!(
                delay >= Duration::from_millis(full / 2) && delay <= Duration::from_millis(full)
            );
        }
        assert_eq!(policy.delay_before_retry(5, &overloaded), None);
        assert_eq!(policy.delay_before_retry(0, &error(ErrorKind::Auth)), None);
    }

    #[test]
    fn honours_retry_after() {
        let mut limited = error(ErrorKind::RateLimited);
        limited.retry_after = Some(Duration::from_secs(7));
        assert_eq!(
            RetryPolicy::default().delay_before_retry(0, &limited),
            Some(Duration::from_secs(7))
        );
    }
}
