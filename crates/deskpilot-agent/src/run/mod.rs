//! The bounded observe → decide → validate → act loop (docs/ARCHITECTURE.md §10).
//!
//! Each step: list the windows (with refusal reasons) and the grant through the host,
//! show the model the bound window's snapshot and the previous step's outcome, ask for
//! one decision, validate it, then act through
//! [`Host::act`](deskpilot_host::Host::act) or rebind through
//! [`Host::observe`](deskpilot_host::Host::observe) for a `switch`. After an action the
//! next step re-observes the window (the action's diff is the previous step's outcome).
//!
//! Validation before anything reaches the host: the answer's schema
//! ([`crate::decision::parse`]); the ref is in the bound window's current tree (a ref
//! seen only under an earlier revision or in another window is
//! `COMPUTER_STALE_REVISION`, an unknown one `COMPUTER_ELEMENT_NOT_FOUND`); the grant's
//! revision is the one the observation was made under; budget is left. A refused
//! step is told to the model as that step's outcome and is never retried by the loop.
//!
//! The run stops on `done`, `ask`, the step cap (`max_steps`, clamped to the grant's
//! actions left), a stop (the host's stop signal, checked before each step and while
//! the model thinks, or a stop record the host reports), revocation, expiry, an
//! exhausted budget, a confirmation only the user can give, a model error, or the same
//! step failing [`REPEAT_LIMIT`] times in a row. The [`RunReport`] and its summary are
//! built from what the host reported; the model's `done` summary appears only as
//! `model_claim`. Switching windows is never counted as work done.
//!
//! The parts: `report` (options, status, step records and the report with its
//! summary), `steps` (the loop itself and [`run`]), `scope` (the observe-only
//! description) and `text` (bounded one-line text for records and prompts).

mod report;
mod scope;
mod steps;
mod text;

pub use report::{
    DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_MAX_STEPS, ExecutedAction, HISTORY_LINES,
    MAX_MODEL_TEXT_CHARS, MAX_STEPS_LIMIT, ObservationMode, Question, REPEAT_LIMIT, RunOptions,
    RunReport, RunStatus, ScopeView, ScopeWindow, StepRecord, runs_dir,
};
pub use scope::describe_scope;
pub use steps::run;
