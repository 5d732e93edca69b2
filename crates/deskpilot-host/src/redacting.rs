//! The one redaction at the driver's boundary (docs/ARCHITECTURE.md §7.15): every
//! string a driver returns passes [`deskpilot_core::redact`] before the host keeps,
//! prints, stores or sends it — window titles and app names in listings, snapshots,
//! matches and launches, element trees, action notes, event details and error
//! messages. So `apps`, `observe --json`, `find`, MCP structured content, errors that
//! quote a title, the prompt a run sends its model, run records and the state file all
//! see `Shop sk_live_•••• checkout`, never the token.
//!
//! The policy's own matching (deny-lists on titles, the irreversible rule on labels)
//! runs on the redacted text too: masking a secret never hides the words those rules
//! look for.

use std::sync::Arc;

use async_trait::async_trait;
use deskpilot_core::redact::{PASSWORD_MASK, mask_secrets, scrub};
use deskpilot_protocol::Result;
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver};

/// A driver whose every answer is redacted ([`Redacting::new`] wraps any driver).
///
/// It also remembers, in memory only and for its own life (the session's), the
/// values it saw in password fields, and masks them wherever else they appear: a
/// page that echoes a password into a paragraph, an address bar showing it in a
/// query.
pub struct Redacting {
    inner: Arc<dyn Driver>,
    seen: std::sync::Mutex<Vec<String>>,
}

/// Password values shorter than this (chars) are not searched for elsewhere: too
/// many ordinary strings would match.
const MIN_REMEMBERED_CHARS: usize = 4;

/// At most this many password values are remembered (the oldest are dropped).
const MAX_REMEMBERED: usize = 64;

impl Redacting {
    /// Wraps `inner` (redaction is idempotent, so wrapping twice is harmless).
    pub fn new(inner: Arc<dyn Driver>) -> Redacting {
        Redacting {
            inner,
            seen: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Remembers the values of the password fields under `root` (before scrubbing).
    fn remember_secrets(&self, root: &deskpilot_core::Node) {
        let found: Vec<String> = root
            .walk()
            .filter(|n| n.has(deskpilot_core::State::Password))
            .filter_map(|n| n.value.clone())
            .filter(|v| {
                v.chars().count() >= MIN_REMEMBERED_CHARS
                    && !v.chars().all(|c| matches!(c, '•' | '●' | '*' | '∙' | '·'))
            })
            .collect();
        if found.is_empty() {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for v in found {
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        let excess = seen.len().saturating_sub(MAX_REMEMBERED);
        seen.drain(..excess);
    }

    /// Replaces every remembered password value in `s` by [`PASSWORD_MASK`].
    fn hide_seen(&self, s: &mut String) {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for v in seen.iter() {
            if s.contains(v.as_str()) {
                *s = s.replace(v.as_str(), PASSWORD_MASK);
            }
        }
    }

    /// [`Self::hide_seen`] on every text of a tree.
    fn hide_seen_in(&self, root: &mut deskpilot_core::Node) {
        if self.seen.lock().map(|s| s.is_empty()).unwrap_or(false) {
            return;
        }
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            self.hide_seen(&mut n.name);
            if let Some(v) = &mut n.value {
                self.hide_seen(v);
            }
            if let Some(d) = &mut n.description {
                self.hide_seen(d);
            }
            stack.extend(n.children.iter_mut());
        }
    }

    /// A window read as it leaves this driver: its password values remembered, then
    /// secrets scrubbed and remembered values hidden everywhere, the window's title
    /// and app name masked. For [`Driver::snapshot`] and the read an action returns
    /// ([`ActResult::after`]).
    fn redact_read(&self, s: &mut TreeSnapshot) {
        self.remember_secrets(&s.root);
        window(&mut s.window);
        self.hide_seen(&mut s.window.title);
        scrub(&mut s.root);
        self.hide_seen_in(&mut s.root);
    }
}

/// Shortest word [`mask_random_looking`] masks, chars: API keys and tokens are 20
/// or more; words of running text are shorter.
const RANDOM_WORD_MIN_CHARS: usize = 20;

/// Masks, in text read by OCR, every word of at least [`RANDOM_WORD_MIN_CHARS`]
/// letters, digits, `_` and `-` that mixes letters and digits: a token whose
/// prefix OCR misread (`ghp 0123…` for `ghp_0123…`) no longer matches the
/// credential patterns, but still looks like one.
fn mask_random_looking(s: &mut String) {
    let looks_random = |w: &str| {
        w.chars().count() >= RANDOM_WORD_MIN_CHARS
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && w.chars().any(|c| c.is_ascii_digit())
            && w.chars().any(|c| c.is_ascii_alphabetic())
    };
    if !s.split_whitespace().any(looks_random) {
        return;
    }
    *s = s
        .split_whitespace()
        .map(|w| {
            if looks_random(w) {
                format!("[masked secret, {} chars]", w.chars().count())
            } else {
                w.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
}

/// The OCR runs of `words` grouped into lines, once (pure): a run joins the first
/// line whose first run its vertical extent overlaps, else starts one; each line's
/// runs (indices into `words`) are in left-to-right order.
fn ocr_lines(words: &[OcrWord]) -> Vec<Vec<usize>> {
    let overlaps = |a: &deskpilot_core::Bounds, b: &deskpilot_core::Bounds| {
        let (at, ab) = (i64::from(a.y), i64::from(a.y) + i64::from(a.height));
        let (bt, bb) = (i64::from(b.y), i64::from(b.y) + i64::from(b.height));
        at < bb && bt < ab
    };
    let mut lines: Vec<Vec<usize>> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        match lines
            .iter_mut()
            .find(|l| overlaps(&words[l[0]].bounds, &w.bounds))
        {
            Some(l) => l.push(i),
            None => lines.push(vec![i]),
        }
    }
    for l in &mut lines {
        l.sort_by_key(|&i| words[i].bounds.x);
    }
    lines
}

/// Whether the runs OCR read on one line hold a secret once put back together
/// (pure): joined without the spaces OCR puts inside a token, as read and with the
/// characters OCR confuses folded (`1`, `|`, `I` → `l`; `0` → `o`), the detector
/// ([`mask_secrets`]) finds one. Runs already masked are left out.
pub(crate) fn line_holds_secret(runs: &[&str]) -> bool {
    let joined: String = runs
        .iter()
        .filter(|r| !r.contains("[masked "))
        .flat_map(|r| r.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    if joined.chars().count() < 12 {
        return false;
    }
    let folded: String = joined
        .chars()
        .map(|c| match c {
            '1' | '|' | 'I' => 'l',
            '0' => 'o',
            c => c,
        })
        .collect();
    // Folding only helps a prefix match: the token's own digits are kept in
    // `joined`, whose detection stands on its own.
    [joined, folded]
        .iter()
        .any(|t| matches!(mask_secrets(t), std::borrow::Cow::Owned(_)))
}

fn masked(s: &mut String) {
    if let std::borrow::Cow::Owned(m) = mask_secrets(s) {
        *s = m;
    }
}

fn window(w: &mut WindowInfo) {
    masked(&mut w.title);
    masked(&mut w.app);
}

fn error(mut e: ComputerError) -> ComputerError {
    masked(&mut e.message);
    e
}

#[async_trait]
impl Driver for Redacting {
    async fn hello(&self) -> Result<Hello> {
        self.inner.hello().await.map_err(error)
    }

    async fn apps(&self) -> Result<Vec<AppInfo>> {
        let mut apps = self.inner.apps().await.map_err(error)?;
        for a in &mut apps {
            masked(&mut a.name);
            a.windows.iter_mut().for_each(window);
        }
        Ok(apps)
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        let mut r = self.inner.launch(p).await.map_err(error)?;
        if let Some(w) = &mut r.window {
            window(w);
        }
        Ok(r)
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        let mut ws = self.inner.windows().await.map_err(error)?;
        ws.iter_mut().for_each(window);
        Ok(ws)
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        self.inner.activate(p).await.map_err(error)
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        let mut s = self.inner.snapshot(p).await.map_err(error)?;
        self.redact_read(&mut s);
        Ok(s)
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        let mut r = self.inner.find(p).await.map_err(error)?;
        for m in &mut r.matches {
            self.remember_secrets(&m.node);
            window(&mut m.window);
            scrub(&mut m.node);
            self.hide_seen_in(&mut m.node);
        }
        Ok(r)
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        let mut r = self.inner.act(p).await.map_err(error)?;
        if let Some(n) = &mut r.note {
            masked(n);
        }
        // The window read after the action is a read like any other.
        if let Some(s) = &mut r.after {
            self.redact_read(s);
        }
        Ok(r)
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        self.inner.subscribe(p).await.map_err(error)
    }

    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        let mut b = self
            .inner
            .next_events(subscription, timeout_ms)
            .await
            .map_err(error)?;
        for e in &mut b.events {
            if let Some(a) = &mut e.app {
                masked(a);
            }
            if let Some(d) = &mut e.detail {
                masked(d);
            }
        }
        Ok(b)
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        self.inner.keys(p).await.map_err(error)
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        self.inner.pointer(p).await.map_err(error)
    }

    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        self.inner.capture(p).await.map_err(error)
    }

    async fn ocr(&self, p: OcrParams) -> Result<OcrResult> {
        let mut r = self.inner.ocr(p).await.map_err(error)?;
        // A token OCR split into runs (`sk_live_ 51H8 xQ…`) or read with look-alike
        // characters is found on its line put back together: every run of such a
        // line is masked.
        for line in ocr_lines(&r.words) {
            let runs: Vec<&str> = line.iter().map(|&i| r.words[i].text.as_str()).collect();
            if line_holds_secret(&runs) {
                for i in line {
                    let n = r.words[i].text.chars().count();
                    r.words[i].text = format!("[masked secret, {n} chars]");
                }
            }
        }
        for word in &mut r.words {
            masked(&mut word.text);
            self.hide_seen(&mut word.text);
            // A one-time code read from pixels has no label beside it to judge
            // by: six to eight digits standing alone are masked as one.
            if let Some(n) = deskpilot_core::redact::otp_digits(&word.text) {
                word.text = format!("[masked code, {n} digits]");
            }
            mask_random_looking(&mut word.text);
        }
        Ok(r)
    }

    async fn clipboard_read(&self) -> Result<ClipboardContent> {
        let mut r = self.inner.clipboard_read().await.map_err(error)?;
        if let Some(t) = &mut r.text {
            // Whatever was copied — a token, a key, a value deskpilot masked in a
            // window — is masked as a shown value would be, in place (the text's
            // lines and spacing are kept).
            masked(t);
            self.hide_seen(t);
        }
        Ok(r)
    }

    async fn clipboard_write(&self, p: ClipboardWriteParams) -> Result<ClipboardWritten> {
        self.inner.clipboard_write(p).await.map_err(error)
    }

    async fn clipboard_targets(&self, p: ClipboardTargetsParams) -> Result<ClipboardTargets> {
        self.inner.clipboard_targets(p).await.map_err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ocr_runs_are_grouped_into_lines_once_left_to_right() {
        let w = |text: &str, x: i32, y: i32| OcrWord {
            text: text.into(),
            bounds: deskpilot_core::Bounds::new(x, y, 40, 20),
            confidence: 90.0,
        };
        let words = [
            w("51H8", 60, 12),
            w("Total", 0, 100),
            w("sk_live_", 0, 10),
            w("42", 50, 102),
        ];
        assert_eq!(ocr_lines(&words), vec![vec![2, 0], vec![1, 3]]);
    }

    #[test]
    fn a_token_split_or_misread_by_ocr_is_found_on_its_line() {
        let key = ["sk_live_", "51H8xQ2eZvKYlo2C", "0123456789abcdEF"];
        assert!(line_holds_secret(&key));
        // Read with a one for the l.
        assert!(line_holds_secret(&[
            "sk_1ive_51H8xQ2e",
            "ZvKYlo2C0123456789ab"
        ]));
        assert!(line_holds_secret(&[
            "ghp_0123456789",
            "abcdefghijABCDEFGHIJ0123"
        ]));
        // Words of a sentence are no token.
        assert!(!line_holds_secret(&[
            "Total", "42", "items", "shipped", "today"
        ]));
        assert!(!line_holds_secret(&[
            "Version",
            "1.2.3",
            "released",
            "2026-12-06"
        ]));
        for line in [
            "File Edit View Search Tools Documents Help",
            "Quarterly report for the north-east region, revision 12",
            "Invoice INV-2026-000123 due 2026-12-31 total EUR 1,204.00",
            "/home/user/Documents/notes-2026/meeting_minutes_v3.txt",
            "https://example.com/products/widget-3000?colour=blue",
        ] {
            let runs: Vec<&str> = line.split(' ').collect();
            assert!(!line_holds_secret(&runs), "{line}");
        }
    }

    #[test]
    fn ocr_words_that_look_random_are_masked() {
        let mut t = "key ghp 0123456789abcdefghijABCDEFGHIJ0123 ok".to_owned();
        mask_random_looking(&mut t);
        assert_eq!(t, "key ghp [masked secret, 34 chars] ok");
        let mut plain = "Internationalization configuration 2026".to_owned();
        mask_random_looking(&mut plain);
        assert_eq!(plain, "Internationalization configuration 2026");
    }
    use deskpilot_protocol::fixture_driver::FixtureDriver;

    const TOKEN: &str = "sk_live_51HqLyjWDarjtT1zdp7dcQz";

    /// The fixture desktop, its first window titled with [`TOKEN`] and holding a
    /// password field and a label that repeats the password, behind [`Redacting`];
    /// with a runtime to drive it.
    fn with_a_password_shown_twice() -> (Redacting, tokio::runtime::Runtime) {
        use deskpilot_core::{Node, Role, State};
        let fixture = Arc::new(FixtureDriver::desktop());
        fixture.mutate(|apps| {
            let w = &mut apps[0].windows[0];
            w.name = format!("Shop {TOKEN} checkout");
            w.children.push(
                Node::new("h:90", Role::Textbox, "Password")
                    .state(State::Password)
                    .value("Hunter2Hunter2"),
            );
            w.children
                .push(Node::new("h:91", Role::Label, "you typed Hunter2Hunter2"));
            w.child_count = w.children.len() as u64;
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        (Redacting::new(fixture), rt)
    }

    /// Asserts that a read shows neither the password nor the token, and the label
    /// with the password masked.
    fn assert_redacted(s: &TreeSnapshot) {
        let all: Vec<String> = s
            .root
            .walk()
            .flat_map(|n| [Some(n.name.clone()), n.value.clone()])
            .flatten()
            .chain([s.window.title.clone()])
            .collect();
        assert!(
            all.iter()
                .all(|t| !t.contains("Hunter2") && !t.contains(TOKEN)),
            "{all:?}"
        );
        assert!(all.iter().any(|t| t == "you typed ••••"), "{all:?}");
    }

    #[test]
    fn a_password_seen_once_is_masked_wherever_it_shows_again() {
        let (d, rt) = with_a_password_shown_twice();
        rt.block_on(async {
            let window = d.windows().await.unwrap()[0].handle.clone();
            let snap = d.snapshot(SnapshotParams::whole(window)).await.unwrap();
            assert_redacted(&snap);
        });
    }

    #[test]
    fn the_read_an_action_returns_is_redacted_as_a_snapshot_is() {
        use deskpilot_core::{Op, Role};
        let (d, rt) = with_a_password_shown_twice();
        rt.block_on(async {
            let window = d.windows().await.unwrap()[0].handle.clone();
            let button = d
                .find(FindParams {
                    window: Some(window.clone()),
                    app: None,
                    text: String::new(),
                    role: Some(Role::Button),
                    limit: Some(1),
                })
                .await
                .unwrap()
                .matches[0]
                .node
                .handle
                .clone();
            let r = d
                .act(ActParams {
                    window,
                    handle: button,
                    op: Op::Click,
                    value: None,
                    settle: Some(Settle {
                        read: true,
                        ..Settle::default()
                    }),
                })
                .await
                .unwrap();
            assert_redacted(&r.after.expect("the fixture reads the window back"));
        });
    }

    #[test]
    fn titles_and_names_leave_the_driver_masked() {
        let (d, rt) = with_a_password_shown_twice();
        rt.block_on(async {
            let apps = d.apps().await.unwrap();
            let t = &apps[0].windows[0].title;
            assert!(t.starts_with("Shop ") && !t.contains(TOKEN), "{t}");
            let ws = d.windows().await.unwrap();
            assert!(ws.iter().all(|w| !w.title.contains(TOKEN)));
        });
    }
}
