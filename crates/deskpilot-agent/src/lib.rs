//! deskpilot-agent: the bounded inner loop behind `deskpilot run` and the MCP tool
//! `computer_task` (docs/ARCHITECTURE.md §10), and the model providers it calls.
//!
//! Each step observes the bound window through the [`deskpilot_host::Host`] (tree,
//! window list with refusal reasons, grant view), asks the bound [`Model`] for exactly
//! one decision in a strict JSON schema ([`decision`]), validates it (schema, ref in
//! the current tree, revision, budget), and acts through the host, which applies every
//! policy rule again. The run ends on `done`, `ask`, the step cap, a stop, expiry, an
//! exhausted budget or the same step failing three times. The [`RunReport`] is
//! assembled from what the host reports it did; the model's prose never becomes the
//! summary.
//!
//! This crate never acts on the desktop except through [`deskpilot_host::Host`], never
//! falls back to another model than the one bound in the config, never retries a
//! desktop action, and never prints to stdout.

#![forbid(unsafe_code)]

mod call;
pub mod decision;
mod http;
pub mod model;
pub mod prompt;
pub mod providers;
pub mod run;

pub use decision::Decision;
pub use model::{
    DecideRequest, Image, Model, ModelReply, ScriptedModel, Usage, model_from_binding,
    require_binding,
};
pub use run::{
    ExecutedAction, ObservationMode, Question, RunOptions, RunReport, RunStatus, ScopeView,
    StepRecord, describe_scope, run, runs_dir,
};
