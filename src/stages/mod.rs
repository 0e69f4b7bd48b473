//! The stages of the fuzzing loop, run in this order for each scheduled input: finish any crash
//! shrink a restart interrupted ([`CrashShrinkStage`]), try the input's expansions
//! ([`ExpandStage`]), havoc mutants ([`HavocStage`]) and input-to-state mutants
//! ([`CmpLogStage`]), each through [`crate::consider`], turn comparison progress on once edges
//! stall ([`StallSwitchStage`]), then write the output directory and check the run's limits
//! ([`ReportStage`]).

mod cmplog;
mod colorize;
mod crash_shrink;
mod expand;
mod havoc;
mod operands;
mod pattern;
mod report;
mod stall;
mod traced;
mod varint;

use libafl::inputs::BytesInput;
use libafl::stages::Restartable;
use libafl::state::HasCurrentTestcase;
use libafl::{Error, HasMetadata};

pub use cmplog::CmpLogStage;
pub use colorize::{Colorizer, MAX_COLORIZE_EXECUTIONS};
pub use crash_shrink::{finish_crash_shrinks, CrashShrinkStage};
pub use expand::ExpandStage;
pub use havoc::HavocStage;
pub use operands::{distinct_operands, KeptOperands, MAX_TRACED_OPERANDS};
pub use pattern::{PatternStage, PatternWork};
pub use report::ReportStage;
pub use stall::{switch_on, EdgeStall, StallSwitchStage};
pub use traced::TRACED_BYTES;
pub use varint::InputToStateReplace;

/// Marks a testcase whose 256 single-byte expansions have all run.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct ByteExpansionsTried;

libafl_bolts::impl_serdeany!(ByteExpansionsTried);

/// Copies the scheduled input into `buffer` (reused: no allocation per scheduled input) and says
/// whether its single-byte expansions were all tried already.
pub(crate) fn load_current_into<S: HasCurrentTestcase<BytesInput>>(
    state: &S,
    buffer: &mut Vec<u8>,
) -> Result<bool, Error> {
    let testcase = state.current_testcase()?;
    let input = testcase
        .input()
        .as_ref()
        .ok_or_else(|| Error::empty("the scheduled testcase has no input"))?;
    buffer.clear();
    buffer.extend_from_slice(input.as_ref());
    Ok(testcase.has_metadata::<ByteExpansionsTried>())
}

/// Implements [`Restartable`] for stages that keep no progress worth saving: after a restart
/// they start over (expansion and havoc from a freshly scheduled input; crash shrinking keeps its
/// own progress in the crash table; reporting has none).
macro_rules! restart_from_scratch {
    ($($stage:ident $(<$param:ident>)?),+) => {$(
        impl<$($param,)? S> Restartable<S> for $stage $(<$param>)? {
            fn should_restart(&mut self, _state: &mut S) -> Result<bool, Error> {
                Ok(true)
            }

            fn clear_progress(&mut self, _state: &mut S) -> Result<(), Error> {
                Ok(())
            }
        }
    )+};
}

restart_from_scratch!(
    CrashShrinkStage,
    PatternStage,
    ExpandStage,
    HavocStage<M>,
    CmpLogStage<M>,
    StallSwitchStage,
    ReportStage
);
