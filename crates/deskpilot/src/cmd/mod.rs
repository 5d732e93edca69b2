//! Command implementations, one file per family.

mod bench;
mod demo;
mod doctor;
mod driver;
mod sandbox;
mod session;

use deskpilot_protocol::DriverError;

use crate::{Cli, Command};

/// Runs one command.
pub async fn run(cli: Cli) -> Result<(), DriverError> {
    let json = cli.json;
    match cli.command {
        Command::Doctor { fix } => doctor::run(json, cli.sandbox, fix).await,
        Command::Sandbox(c) => sandbox::run(json, cli.sandbox, c).await,
        Command::Apps => session::apps(json, cli.sandbox).await,
        Command::Observe {
            target,
            scope,
            query,
            max_tokens,
        } => session::observe(json, cli.sandbox, target, scope, query, max_tokens).await,
        Command::Find {
            text,
            role,
            target,
            limit,
        } => session::find(json, cli.sandbox, text, role, target, limit).await,
        Command::Act { ref_, op, value } => session::act(json, cli.sandbox, ref_, op, value).await,
        Command::Keys { keys, text, target } => {
            session::keys(json, cli.sandbox, keys, text, target).await
        }
        Command::Wait {
            target,
            text,
            gone,
            role,
            name,
            window_title,
            timeout_ms,
        } => {
            session::wait(
                json,
                cli.sandbox,
                target,
                session::WaitArgs {
                    text,
                    gone,
                    role,
                    name,
                    window_title,
                },
                timeout_ms,
            )
            .await
        }
        Command::Demo { keep } => demo::run(json, keep).await,
        Command::Driver => driver::run(cli.sandbox).await,
        Command::Bench { runs, apps } => bench::run(cli.json, runs, apps).await,
    }
}
