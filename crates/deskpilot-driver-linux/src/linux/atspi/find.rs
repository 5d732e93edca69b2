//! `tree.find`: elements whose name, value or description contains a text.
//!
//! Owns [`search`] (pure, over an already read tree) and [`find`], which reads the
//! windows to search: the one given, every window of the named application, or every
//! window of every responsive application. Matching is case-insensitive on Unicode
//! lower case, ignoring invisible characters, and a text copied from a snapshot line
//! matches with its escapes undone ([`Needle`]); an empty text with a role lists
//! that role. It never acts and never
//! reads a window it does not search.

use deskpilot_core::sanitize::Needle;
use deskpilot_core::{Node, Role};
use deskpilot_protocol::types::{AppStatus, FindMatch, FindParams, FindResult, SnapshotParams};

use super::apps::list_apps;
use super::connection::Bus;
use super::options::ConnectOptions;
use super::snapshot::read;
use deskpilot_protocol::Result;

/// Default number of matches (the protocol's `limit` default).
pub const DEFAULT_LIMIT: u32 = 20;

/// Matches in `root` (pre-order), each without its children, at most `limit`.
pub fn search(root: &Node, text: &str, role: Option<Role>, limit: usize) -> Vec<Node> {
    let needle = Needle::new(text);
    root.walk()
        .filter(|n| role.is_none_or(|r| n.role == r))
        .filter(|n| {
            needle.is_empty()
                || needle.found_in(&n.name)
                || n.value.as_deref().is_some_and(|v| needle.found_in(v))
                || n.description.as_deref().is_some_and(|d| needle.found_in(d))
        })
        .take(limit)
        .map(|n| Node {
            children: Vec::new(),
            ..n.clone()
        })
        .collect()
}

/// Reads the windows in scope and searches them in turn until `limit` matches.
///
/// Errors: those of `tree.snapshot` for an explicit window; windows of other
/// applications that fail to read are skipped (logged).
pub async fn find(bus: &Bus, opts: &ConnectOptions, p: &FindParams) -> Result<FindResult> {
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT) as usize;
    let mut matches = Vec::new();
    let windows = match &p.window {
        Some(w) => vec![(w.clone(), true)],
        None => {
            let wanted = p.app.as_deref().map(str::to_lowercase);
            list_apps(bus)
                .await?
                .into_iter()
                .filter(|a| a.status == AppStatus::Ok)
                .filter(|a| wanted.as_deref().is_none_or(|w| a.name.to_lowercase() == w))
                .flat_map(|a| a.windows.into_iter().map(|w| (w.handle, false)))
                .collect()
        }
    };
    for (handle, explicit) in windows {
        if matches.len() >= limit {
            break;
        }
        let params = SnapshotParams::whole(handle);
        let r = match read(bus, opts, &params).await {
            Ok(r) => r,
            Err(e) if explicit => return Err(e),
            Err(e) => {
                tracing::debug!(error = %e, "window skipped by find");
                continue;
            }
        };
        for node in search(&r.root, &p.text, p.role, limit - matches.len()) {
            matches.push(FindMatch {
                window: r.window.clone(),
                node,
            });
        }
    }
    Ok(FindResult { matches })
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskpilot_core::State;

    /// ```text
    /// window "Calculator"
    /// ├── button "7"
    /// ├── button "Seven" description "digit 7"
    /// ├── textbox value "1+7"
    /// └── group
    ///     └── button "="
    /// ```
    fn fixture() -> Node {
        Node::new("w", Role::Window, "Calculator").children(vec![
            Node::new("b7", Role::Button, "7"),
            Node {
                description: Some("digit 7".into()),
                ..Node::new("s7", Role::Button, "Seven")
            },
            Node::new("t", Role::Textbox, "")
                .value("1+7")
                .state(State::Editable),
            Node::new("g", Role::Group, "").children(vec![Node::new("eq", Role::Button, "=")]),
        ])
    }

    #[test]
    fn matches_name_value_and_description_case_insensitively() {
        let root = fixture();
        let hits: Vec<String> = search(&root, "7", None, 20)
            .iter()
            .map(|n| n.handle.to_string())
            .collect();
        assert_eq!(hits, vec!["b7", "s7", "t"]);
        assert_eq!(search(&root, "SEVEN", None, 20)[0].handle.as_str(), "s7");
        assert_eq!(search(&root, "calc", None, 20)[0].handle.as_str(), "w");
    }

    #[test]
    fn role_filter_limit_and_children_stripped() {
        let root = fixture();
        let buttons = search(&root, "", Some(Role::Button), 20);
        assert_eq!(buttons.len(), 3);
        assert!(buttons.iter().all(|n| n.children.is_empty()));
        assert_eq!(search(&root, "", Some(Role::Button), 2).len(), 2);
        let group = search(&root, "", Some(Role::Group), 20);
        assert!(group[0].children.is_empty());
        assert_eq!(group[0].child_count, 1);
        assert!(search(&root, "nothing like this", None, 20).is_empty());
    }
}
