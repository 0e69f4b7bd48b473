//! Feedbacks: is this execution an improvement?
//!
//! [`LabelFeedback`] (the corpus feedback) says yes when a passing execution shows a label that is
//! new or whose best input is less simple. [`CrashLabelFeedback`] (the objective) says yes when a
//! failing execution shows a new crash label or a simpler reproducer of a known one, and writes
//! the reproducer to disk there and then.

use std::borrow::Cow;

use libafl::corpus::Testcase;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::inputs::HasTargetBytes;
use libafl::state::{HasExecutions, HasStartTime};
use libafl::{Error, HasMetadata};
use libafl_bolts::tuples::{Handle, MatchName, MatchNameRef};
use libafl_bolts::{current_time, Named, ToSlice};
use serde::{Deserialize, Serialize};

use crate::crash::CrashObserver;
use crate::crashes::CrashTable;
use crate::crashes::LastCrash;
use crate::gates::WatchedGates;
use crate::labels::{collect_edge_labels, Label};
use crate::order::Simplicity;
use crate::output::OutputDir;
use crate::seen::{input_hash, KilledInputs};
use crate::side_labels::SideLabelsObserver;
use crate::table::CorpusTable;

/// The SanitizerCoverage edge map of raw hit counts. The AFL bucket of each hit edge is worked
/// out while its labels are collected ([`collect_edge_labels`]): LibAFL's hit-count observer
/// rewrites the whole map after every execution, which on a large target (SQLite's 60 000
/// edges) cost a fifth of the fuzzer's time for the few hundred edges a run hits.
pub type EdgesObserver = libafl::observers::StdMapObserver<'static, u8, false>;

/// Names a feedback and makes it create its table in the state (once: a restored state keeps
/// the table it has).
macro_rules! feedback_with_table {
    ($feedback:ident, $name:literal, $table:ident) => {
        impl Named for $feedback {
            fn name(&self) -> &Cow<'static, str> {
                static NAME: Cow<'static, str> = Cow::Borrowed($name);
                &NAME
            }
        }

        impl<S: HasMetadata> StateInitializer<S> for $feedback {
            fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
                if !state.has_metadata::<$table>() {
                    state.add_metadata($table::default());
                }
                Ok(())
            }
        }
    };
}

feedback_with_table!(LabelFeedback, "labels", CorpusTable);
feedback_with_table!(CrashLabelFeedback, "crash-labels", CrashTable);

/// The labels an input showed when it entered the corpus (testcase metadata).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InputLabels(pub Vec<Label>);

libafl_bolts::impl_serdeany!(InputLabels);

/// The corpus feedback: interesting when the execution improves some edge label.
#[derive(Debug)]
pub struct LabelFeedback {
    edges: Handle<EdgesObserver>,
    side_labels: Handle<SideLabelsObserver>,
    /// The labels of the last execution, reused so that checking costs no allocation.
    labels: Vec<Label>,
}

impl LabelFeedback {
    /// A feedback reading labels from the observers `edges` and `side_labels`.
    #[must_use]
    pub fn new(edges: Handle<EdgesObserver>, side_labels: Handle<SideLabelsObserver>) -> Self {
        LabelFeedback {
            edges,
            side_labels,
            labels: Vec::with_capacity(1024),
        }
    }
}

impl<EM, I, OT, S> Feedback<EM, I, OT, S> for LabelFeedback
where
    I: Simplicity,
    OT: MatchName,
    S: HasMetadata,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        _manager: &mut EM,
        input: &I,
        observers: &OT,
        exit_kind: &ExitKind,
    ) -> Result<bool, Error> {
        self.labels.clear();
        let side_labels = observers
            .get(&self.side_labels)
            .ok_or_else(|| Error::key_not_found("the side-labels observer is missing"))?;
        // A failing run's coverage stops at the failure: it belongs to the crash, not the corpus.
        // An input the harness rejected is no label's best either.
        if side_labels.rejected() || *exit_kind != ExitKind::Ok {
            return Ok(false);
        }
        let edges = observers
            .get(&self.edges)
            .ok_or_else(|| Error::key_not_found("the edges observer is missing"))?;
        collect_edge_labels(edges.to_slice(), &mut self.labels);
        self.labels.extend_from_slice(side_labels.labels());
        let table = state.metadata::<CorpusTable>()?;
        let key = input.simplicity_key();
        Ok(if crate::long_run::in_mutant() {
            table.improves_by_new_edge_or_simpler(&key, &self.labels)
        } else {
            table.improves(&key, &self.labels)
        })
    }

    fn append_metadata(
        &mut self,
        _state: &mut S,
        _manager: &mut EM,
        _observers: &OT,
        testcase: &mut Testcase<I>,
    ) -> Result<(), Error> {
        testcase.add_metadata(InputLabels(self.labels.clone()));
        Ok(())
    }
}

/// The objective: interesting when a failing execution improves a crash label.
#[derive(Debug)]
pub struct CrashLabelFeedback {
    crash: Handle<CrashObserver>,
    out: OutputDir,
}

impl CrashLabelFeedback {
    /// An objective reading crashes from `crash` and writing reproducers under `out`.
    #[must_use]
    pub fn new(crash: Handle<CrashObserver>, out: OutputDir) -> Self {
        CrashLabelFeedback { crash, out }
    }
}

impl<EM, I, OT, S> Feedback<EM, I, OT, S> for CrashLabelFeedback
where
    I: Simplicity + HasTargetBytes,
    OT: MatchName,
    S: HasMetadata + HasExecutions + HasStartTime,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        _manager: &mut EM,
        input: &I,
        observers: &OT,
        exit_kind: &ExitKind,
    ) -> Result<bool, Error> {
        if *exit_kind == ExitKind::Ok {
            return Ok(false);
        }
        let observer = observers
            .get(&self.crash)
            .ok_or_else(|| Error::key_not_found("the crash observer is missing"))?;
        let Some(info) = observer.last() else {
            return Ok(false);
        };
        state.metadata_or_insert_with(LastCrash::default).0 = Some(info.label());
        let bytes = input.target_bytes();
        if info.kind != crate::crash::CrashKind::Panic {
            // A signal or timeout ends this process: remember the input for the next one.
            state
                .metadata_or_insert_with(KilledInputs::default)
                .insert(input_hash(&bytes));
        }
        let key = input.simplicity_key();
        if !state.metadata::<CrashTable>()?.improves(info.label(), &key) {
            return Ok(false);
        }
        // Write now: after a signal or timeout the process restarts right after this call.
        let secs = current_time()
            .saturating_sub(*state.start_time())
            .as_secs_f64();
        let execs = *state.executions();
        let recorded = state
            .metadata_mut::<CrashTable>()?
            .record(&self.out, info, &key, &bytes, secs, execs);
        if recorded.is_ok() {
            let gates = state
                .metadata::<WatchedGates>()
                .map(|w| w.0.clone())
                .unwrap_or_default();
            state
                .metadata_mut::<CrashTable>()?
                .keep_gates(info.label(), &gates);
        }
        if let Err(e) = recorded {
            // Not an error returned to LibAFL: after a signal this runs inside its crash handler,
            // which cannot report one. Say where the crash is kept and stop the whole run.
            crate::say!("labelfuzz: error: {e}");
            crate::interrupt::mark_failed();
            return Ok(false);
        }
        Ok(true)
    }
}
