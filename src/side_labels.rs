//! The labels an execution shows beside its edges, and the harness's verdict on its input, as
//! one LibAFL observer.
//!
//! The comparison callbacks (`labelfuzz-runtime`'s `sancov_cmp.c`) write comparison progress
//! and the value profile into maps of their own, and the harness marks a rejected input
//! (libFuzzer's `-1`, cargo-fuzz's `Corpus::Reject`) in a flag: the target's process can reach
//! nothing else. This observer clears them before an execution and reads them after it, so
//! that the corpus feedback takes every label from its observers, as it takes the edges.

use std::borrow::Cow;

use libafl::executors::ExitKind;
use libafl::observers::Observer;
use libafl::Error;
use libafl_bolts::Named;
use serde::{Deserialize, Serialize};

use crate::labels::Label;

/// The name under which the [`SideLabelsObserver`] is found in an observer tuple.
pub const SIDE_LABELS_OBSERVER_NAME: &str = "side-labels";

/// Observes the comparison labels of an execution (comparison progress, and the value profile
/// when it is on) and whether the harness rejected its input.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SideLabelsObserver {
    /// The last passing execution's comparison labels (reused: no allocation per execution).
    #[serde(skip)]
    labels: Vec<Label>,
    /// Whether the harness rejected the last input.
    rejected: bool,
}

impl SideLabelsObserver {
    /// A fresh observer.
    #[must_use]
    pub fn new() -> Self {
        SideLabelsObserver {
            labels: Vec::with_capacity(256),
            rejected: false,
        }
    }

    /// The comparison labels of the last execution (empty after a failing one).
    #[must_use]
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// Whether the harness rejected the last input.
    #[must_use]
    pub fn rejected(&self) -> bool {
        self.rejected
    }
}

impl Named for SideLabelsObserver {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed(SIDE_LABELS_OBSERVER_NAME);
        &NAME
    }
}

impl<I, S> Observer<I, S> for SideLabelsObserver {
    fn pre_exec(&mut self, _state: &mut S, _input: &I) -> Result<(), Error> {
        let _ = crate::reject::take_rejected();
        crate::value_profile::reset_before_run();
        crate::cmp_progress::reset_before_run();
        Ok(())
    }

    fn post_exec(&mut self, _state: &mut S, _input: &I, exit_kind: &ExitKind) -> Result<(), Error> {
        self.rejected = crate::reject::take_rejected();
        self.labels.clear();
        // A failing execution's labels belong to its crash; after a signal this runs inside
        // LibAFL's handler, where nothing more is read than needed.
        if *exit_kind == ExitKind::Ok {
            crate::value_profile::collect_labels(&mut self.labels);
            crate::cmp_progress::collect_labels(&mut self.labels);
        }
        Ok(())
    }
}
