//! The reading tools: `computer_apps`, `computer_observe`, `computer_read`,
//! `computer_find`, `computer_wait`, `computer_screenshot`. None dispatches an effect.

use std::time::Duration;

use deskpilot_host::ObserveOptions;
use deskpilot_host::listing::{NO_APPS, render_app};
use deskpilot_host::session::WaitFor;
use deskpilot_protocol::ComputerError;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;

use crate::args::*;
use crate::output::*;
use crate::server::*;

impl Server {
    pub(crate) async fn apps(
        &self,
        _a: AppsArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let apps = match h.apps().await {
            Ok(a) => a,
            Err(e) => return failure(&e, ""),
        };
        let blocks: Vec<String> = apps.iter().map(render_app).collect();
        let (mut text, omitted) = fit_lines(&blocks, DEFAULT_MAX_TOKENS as usize, |rest| {
            format!(
                "({rest} more applications not shown, over the {DEFAULT_MAX_TOKENS}-token budget; observe one by app= to work in it)\n"
            )
        });
        if apps.is_empty() {
            text.push_str(NO_APPS);
            text.push('\n');
        }
        let grant = h.grant_view();
        if let Some(g) = &grant {
            text.push_str(&g.line());
        }
        let data = AppsOutput::new(&apps, apps.len() - omitted, grant.as_ref());
        success(with_warnings(text.trim_end().to_string(), &h), &data)
    }

    pub(crate) async fn observe(
        &self,
        a: ObserveArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let (budget, capped) = budget(a.max_tokens);
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let opts = ObserveOptions {
            scope: a.scope.filter(|s| !s.is_empty()),
            query: a.query.filter(|s| !s.is_empty()),
            max_tokens: budget,
            from: a.from,
        };
        let obs = match h.observe(&target(&a.app, &a.window), &opts).await {
            Ok(o) => o,
            Err(e) => return failure(&e, ""),
        };
        let mut text = format!(
            "{}\n({} tokens · read {} objects in {} ms)",
            obs.text.trim_end(),
            obs.tokens,
            obs.stats.objects,
            obs.elapsed_ms
        );
        if capped {
            text.push_str(&format!(
                "\n(max_tokens lowered to the cap of {MAX_TOKENS_CAP}; use scope or query for the rest)"
            ));
        }
        if let Some(g) = &obs.grant {
            text.push_str(&format!("\n{}", g.line()));
        }
        if let Some(b) = &obs.basis {
            text.push_str(&format!(" · basis {b}"));
        }
        let data = ObserveOutput::new(&obs, budget);
        success(with_warnings(text, &h), &data)
    }

    pub(crate) async fn read(
        &self,
        a: ReadArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let out = match h.read_text(&a.ref_, a.from, a.to, a.tail).await {
            Ok(out) => out,
            Err(e) => return failure(&e, ""),
        };
        // The text a model reads has controls and invisible characters escaped
        // (a hidden payload shows); structured content carries it exactly.
        let mut text = deskpilot_core::sanitize::multi_line(&out.text);
        if !out.complete && out.note.is_none() {
            text.push_str(&format!(
                "\n(read {} of {} characters: one read takes at most that many)",
                out.to, out.total_chars
            ));
        }
        if let Some(note) = &out.note {
            text.push_str(&format!("\n({note})"));
        }
        success(with_warnings(text, &h), &out)
    }

    pub(crate) async fn find(
        &self,
        a: FindArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        if a.text.is_empty() {
            return failure(&ComputerError::invalid("say what text to find"), "");
        }
        let role = match a.role.as_deref().filter(|r| !r.is_empty()).map(parse_role) {
            Some(Err(e)) => return failure(&e, ""),
            Some(Ok(r)) => Some(r),
            None => None,
        };
        let limit = a
            .limit
            .unwrap_or(DEFAULT_FIND_LIMIT)
            .clamp(1, MAX_FIND_LIMIT) as usize;
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let (hits, unsearched) = match h
            .find(&target(&a.app, &a.window), &a.text, role, limit)
            .await
        {
            Ok(found) => (found.hits, found.unsearched),
            Err(e) => return failure(&e, ""),
        };
        let lines: Vec<String> = hits
            .iter()
            .map(|hit| format!("{}   (in {})", hit.line, hit.window_ref))
            .collect();
        let (mut text, omitted) = fit_lines(&lines, DEFAULT_MAX_TOKENS as usize, |rest| {
            format!(
                "({rest} more matches not shown, over the {DEFAULT_MAX_TOKENS}-token budget; narrow with role= or a longer text, or observe with query=)\n"
            )
        });
        let shown = deskpilot_core::sanitize::one_line(&a.text);
        if hits.is_empty() && unsearched.is_empty() {
            text.push_str(&format!("no element matches \"{shown}\""));
        } else if hits.is_empty() {
            text.push_str(&format!(
                "no element matches \"{shown}\" in what was searched; {}",
                unsearched.describe()
            ));
        } else {
            if hits.len() == limit {
                text.push_str(&format!(
                    "(showing the first {limit} matches; raise limit for more)\n"
                ));
            }
            text.push_str(&unsearched.describe());
        }
        let data = FindOutput {
            matches: hits.iter().take(hits.len() - omitted).cloned().collect(),
            omitted,
            unsearched,
        };
        success(with_warnings(text.trim_end().to_string(), &h), &data)
    }

    pub(crate) async fn wait(
        &self,
        a: WaitArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let nonempty = |s: &Option<String>| s.as_ref().filter(|x| !x.is_empty()).cloned();
        let conds = [
            nonempty(&a.text).is_some(),
            nonempty(&a.gone).is_some(),
            nonempty(&a.role).is_some() || nonempty(&a.name).is_some(),
            nonempty(&a.window_title).is_some(),
        ];
        if conds.iter().filter(|c| **c).count() != 1 {
            return failure(
                &ComputerError::invalid(
                    "give exactly one condition: text, gone, role with name, or window_title",
                ),
                "",
            );
        }
        let cond = if let Some(t) = nonempty(&a.text) {
            WaitFor::Text(t)
        } else if let Some(t) = nonempty(&a.gone) {
            WaitFor::Gone(t)
        } else if let Some(t) = nonempty(&a.window_title) {
            WaitFor::Window(t)
        } else {
            let (Some(r), Some(name)) = (nonempty(&a.role), nonempty(&a.name)) else {
                return failure(
                    &ComputerError::invalid("role and name go together: give both"),
                    "",
                );
            };
            match parse_role(&r) {
                Ok(role) => WaitFor::Element { role, name },
                Err(e) => return failure(&e, ""),
            }
        };
        let timeout_ms = a.timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS);
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let target = target(&a.app, &a.window);
        let waited = drive(
            h.wait(&target, &cond, Duration::from_millis(timeout_ms)),
            ctx,
            timeout_ms,
            "waiting",
        )
        .await;
        let out = match waited {
            None => return cancelled(),
            Some(Err(e)) => return failure(&e, ""),
            Some(Ok(out)) => out,
        };
        let lines: Vec<String> = out.hits.iter().map(|hit| hit.line.clone()).collect();
        let (hits_text, omitted) = fit_lines(&lines, DEFAULT_MAX_TOKENS as usize, |rest| {
            format!("({rest} more matches not shown; observe with query= to see them)\n")
        });
        let mut text = format!("ok condition met after {} ms", out.elapsed_ms);
        if !hits_text.is_empty() {
            text.push('\n');
            text.push_str(hits_text.trim_end());
        }
        let data = WaitOutput {
            met: out.met,
            elapsed_ms: out.elapsed_ms,
            matches: out
                .hits
                .iter()
                .take(out.hits.len() - omitted)
                .cloned()
                .collect(),
            omitted,
        };
        success(with_warnings(text, &h), &data)
    }

    pub(crate) async fn screenshot(
        &self,
        a: ScreenshotArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        use deskpilot_host::host::pixels::ShotMode;
        let mode = match a.mode {
            ScreenshotMode::Ocr => ShotMode::Ocr,
            ScreenshotMode::Image => ShotMode::Image,
            ScreenshotMode::Marks => ShotMode::Marks,
        };
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let shot = match h
            .screenshot(&target(&a.app, &a.window), mode, a.max_side)
            .await
        {
            Ok(s) => s,
            Err(e) => return failure(&e, ""),
        };
        let text = shot.render("");
        let text = with_warnings(text, &h);
        let mut r = success(text, &shot);
        if mode != ShotMode::Ocr {
            use base64::Engine as _;
            let data = base64::engine::general_purpose::STANDARD.encode(&shot.png);
            r.content.push(ContentBlock::image(data, "image/png"));
        }
        r
    }
}
