//! Where a task stands in a chain of delegations: the tasks that handed it down, root first,
//! across services. Each `delegate` submit carries it (the API's `delegation` field), so a
//! chain that grows too long, or comes back to a service it passed through, is refused
//! before it starts another run: two services that delegate to each other would otherwise
//! loop until something else broke.

use crate::store::{Store, StoreError};
use deskhand_protocol::ids::TaskId;

/// The most delegations between a person's task and the deepest task it led to.
pub const MAX_HOPS: usize = 4;
/// The longest task id a chain may hold (ours are 36 characters).
const MAX_ID_LEN: usize = 64;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lineage {
    /// The ids of the tasks that delegated, root first; empty for a task a person started.
    pub chain: Vec<TaskId>,
}

impl Lineage {
    /// A chain as a submit states it: `hops` must be its length.
    pub fn stated(hops: usize, chain: Vec<TaskId>) -> Result<Self, LineageError> {
        if hops != chain.len() {
            return Err(LineageError::Hops {
                hops,
                ids: chain.len(),
            });
        }
        if chain
            .iter()
            .any(|id| id.as_str().is_empty() || id.as_str().len() > MAX_ID_LEN)
        {
            return Err(LineageError::Id);
        }
        Ok(Self { chain })
    }

    /// How many delegations led to this task.
    pub fn hops(&self) -> usize {
        self.chain.len()
    }

    /// The lineage of a task that `task` (of this lineage) delegates to.
    pub fn child_of(&self, task: &TaskId) -> Self {
        let mut chain = self.chain.clone();
        chain.push(task.clone());
        Self { chain }
    }

    /// Refuses a chain past [`MAX_HOPS`], or one that holds a task of this service's
    /// history: the delegation came back around.
    pub fn check(&self, store: &Store) -> Result<(), LineageError> {
        if self.hops() > MAX_HOPS {
            return Err(LineageError::TooLong { hops: self.hops() });
        }
        for id in &self.chain {
            if store.task(id)?.is_some() {
                return Err(LineageError::Loop { id: id.clone() });
            }
        }
        Ok(())
    }
}

/// Why a submit's chain of delegations is refused.
#[derive(Debug, thiserror::Error)]
pub enum LineageError {
    #[error("`delegation.hops` is {hops} but `delegation.chain` holds {ids} task ids")]
    Hops { hops: usize, ids: usize },
    #[error("`delegation.chain` holds task ids of 1 to {MAX_ID_LEN} characters")]
    Id,
    #[error(
        "refused: this task would be delegation number {hops} in a row, and at most \
         {MAX_HOPS} are allowed"
    )]
    TooLong { hops: usize },
    #[error(
        "refused: a delegation loop: task {id}, which this task was delegated from, runs on \
         this service"
    )]
    Loop { id: TaskId },
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_too_long_inconsistent_or_back_at_this_service_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let ids = |n: usize| {
            (0..n)
                .map(|i| TaskId::from(format!("t{i}")))
                .collect::<Vec<_>>()
        };
        assert!(Lineage::default().check(&store).is_ok());
        let longest = Lineage::stated(MAX_HOPS, ids(MAX_HOPS)).unwrap();
        assert!(longest.check(&store).is_ok());
        let error = longest.child_of(&"last".into()).check(&store).unwrap_err();
        assert!(error.to_string().contains("at most 4"), "{error}");
        let error = Lineage::stated(2, ids(1)).unwrap_err();
        assert!(
            error.to_string().contains("`delegation.hops` is 2"),
            "{error}"
        );
        assert!(Lineage::stated(1, vec![TaskId::from("")]).is_err());
    }
}
