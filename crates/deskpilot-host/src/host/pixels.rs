//! The pixel rung under the policy (docs/ARCHITECTURE.md §8a): `screenshot` (an
//! image, a Set-of-Mark image or OCR elements of the bound window), OCR elements
//! offered by `observe` for a window with no tree, and acting on an OCR element
//! (`act o3 click`) as a pointer gesture through the one action pipeline.
//!
//! Rules enforced here, before the driver is asked for a pixel:
//! - pixels only when the grant allows them (`capture = "a11y-and-pixels"`), else
//!   `COMPUTER_SCOPE_VIOLATION` naming the setting;
//! - every refusal of the window ([`Refusals::check_window`]), a window that shows
//!   deskpilot's own files, and a focused password field (`COMPUTER_SECURE_INPUT`);
//! - the rectangles of secret fields and of every element whose text the redaction
//!   masks are painted over by the driver before the image exists anywhere else;
//! - one audit record per capture: its size and mode, never pixels or text.

use std::borrow::Cow;

use deskpilot_core::redact::{is_secret_field, redacted_name, redacted_value};
use deskpilot_core::{Bounds, Node, Op, Role};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::grant::Capture;
use deskpilot_policy::input::input_may_reach_password;
use deskpilot_protocol::types::{
    CaptureParams, MarkSpec, OcrParams, OcrWord, PointerAction, WindowInfo,
};
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::{Deserialize, Serialize};

pub use crate::store::OcrElement;

use super::{Basis, Host, fail, refused};
use crate::session::{KeysOutcome, ObserveOptions, Target};
use deskpilot_protocol::Result;

/// Longest side of a screenshot by default, image pixels: what Claude-style vision
/// models take without shrinking (1,568 px is their ceiling; 1,280 keeps a 16:9
/// window at about 1,229 tokens).
pub const DEFAULT_MAX_SIDE: u32 = 1280;

/// What one screenshot of `w` costs at the default downscale, in estimated vision
/// tokens ([`deskpilot_core::tokens::screenshot_tokens`] of its device pixels, the
/// toolkit's scale applied, long side cut to [`DEFAULT_MAX_SIDE`]): a screenshot
/// agent's price per look at the window. 0 when the window has no extents.
pub fn window_screenshot_tokens(w: &WindowInfo) -> u64 {
    w.device_bounds.or(w.bounds).map_or(0, |b| {
        deskpilot_core::tokens::screenshot_tokens(
            b.width.max(0) as u32,
            b.height.max(0) as u32,
            DEFAULT_MAX_SIDE,
        )
    })
}

/// Image elements `observe` reads by OCR at most, the largest first: each costs a
/// tesseract run (0.2–1 s for a chart-sized region here).
pub const MAX_OCR_IMAGES: usize = 3;

/// Smallest image element read by OCR, (width, height) tree pixels: icons are
/// smaller and hold no text worth reading.
pub const MIN_OCR_IMAGE: (i32, i32) = (48, 24);

/// What a screenshot returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ShotMode {
    /// The window's pixels.
    Image,
    /// The pixels with a numbered box on each interactive element, labelled with
    /// the ref `observe` gives it.
    Marks,
    /// Text recognised in the pixels, as elements `o1`, `o2`… to act on.
    Ocr,
}

impl ShotMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ShotMode::Image => "image",
            ShotMode::Marks => "marks",
            ShotMode::Ocr => "ocr",
        }
    }
}

/// One entry of a screenshot's legend: a marked element or an OCR element, with its
/// box in image pixels.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LegendEntry {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub role: String,
    /// Name (redacted), or the recognised text.
    pub name: String,
    /// Image pixels.
    pub bounds: Bounds,
}

/// A screenshot of the bound window.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Screenshot {
    pub window_ref: String,
    pub window: WindowInfo,
    pub mode: ShotMode,
    /// The PNG (not serialized: the CLI writes it where `--out` says, MCP sends it
    /// as image content).
    #[serde(skip)]
    pub png: Vec<u8>,
    /// Image size, pixels.
    pub width: u32,
    pub height: u32,
    /// The coordinate basis of this image for `click-at` (`rREV:X,Y,WxH@SCALE`:
    /// device geometry of the window, image pixels per device pixel).
    pub basis: String,
    /// Device pixels per tree pixel (the toolkit's scale, measured).
    pub toolkit_scale: f64,
    /// Estimated vision tokens of the image (width × height / 750).
    pub image_tokens: u64,
    /// Marked elements (mode `marks`) or OCR elements (mode `ocr`).
    pub legend: Vec<LegendEntry>,
    /// The text a model reads beside the image: one line per legend entry.
    pub text: String,
    /// What the image may not show truthfully, and what was painted over.
    pub notes: Vec<String>,
}

/// True when `t` carries one of the redaction's masks (`••••`, `[masked …]`): the
/// trees the host reads come through the redacting driver already masked.
fn shows_mask(t: &str) -> bool {
    t.contains("[masked ") || t.contains(deskpilot_core::redact::PASSWORD_MASK)
}

impl Screenshot {
    /// The result as a model or a terminal reads it: the summary line (mode,
    /// window, size, basis, scale, estimated tokens, then `extra`), the legend, and
    /// the notes.
    pub fn render(&self, extra: &str) -> String {
        let mut text = format!(
            "ok screenshot {} {} \"{}\" · {}×{} px · basis {} (click-at coordinates are image pixels under it) · scale {} · ~{} image tokens (estimate: width × height / 750){extra}",
            self.mode.as_str(),
            self.window_ref,
            deskpilot_core::sanitize::one_line(&self.window.title),
            self.width,
            self.height,
            self.basis,
            self.toolkit_scale,
            self.image_tokens,
        );
        if !self.text.is_empty() {
            text.push('\n');
            text.push_str(&self.text);
        }
        for n in &self.notes {
            text.push_str("\n· ");
            text.push_str(n);
        }
        text
    }
}

/// Whether an element's text is redacted anywhere it shows (pure): a secret field,
/// a text already masked, or a name or value the redaction would change.
fn redacted(n: &Node, parent: Option<&Node>) -> bool {
    let texts = [
        Some(n.name.as_str()),
        n.value.as_deref(),
        n.description.as_deref(),
    ];
    is_secret_field(n)
        || texts.into_iter().flatten().any(shows_mask)
        || matches!(redacted_name(n), Cow::Owned(_))
        || n.value.is_some()
            && redacted_value(n, parent)
                .is_some_and(|v| v.as_ref() != n.value.as_deref().unwrap_or(""))
}

/// The tree-pixel rectangles to paint over in a capture of `root` (pure): every
/// element below the window [`redacted`] (its whole box, children included).
pub fn paint_rects(root: &Node) -> Vec<Bounds> {
    let mut out = Vec::new();
    let mut stack: Vec<(&Node, Option<&Node>)> = vec![(root, None)];
    while let Some((n, parent)) = stack.pop() {
        // The window's own title is drawn by the window manager, outside the
        // captured client area; a title shown inside is a child element.
        if (parent.is_some() || is_secret_field(n)) && redacted(n, parent) {
            if let Some(b) = n.bounds.filter(|b| !b.is_empty()) {
                out.push(b);
            }
            if is_secret_field(n) {
                continue;
            }
        }
        stack.extend(n.children.iter().map(|c| (c, Some(n))));
    }
    out
}

/// `COMPUTER_SCOPE_VIOLATION` for a capture of a window that shows deskpilot's own
/// files (path `p`).
fn shows_own_files(p: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::ScopeViolation,
        format!(
            "the window shows deskpilot's own files ({:?}): it is not captured",
            deskpilot_core::sanitize::one_line(p)
        ),
    )
}

/// A device rectangle in tree pixels of `window`.
fn device_rect_to_tree(window: &WindowInfo, b: &Bounds) -> Bounds {
    let (x0, y0) = window.device_to_tree(f64::from(b.x), f64::from(b.y));
    let (x1, y1) = window.device_to_tree(f64::from(b.x + b.width), f64::from(b.y + b.height));
    Bounds::new(
        x0.floor() as i32,
        y0.floor() as i32,
        (x1 - x0).ceil() as i32,
        (y1 - y0).ceil() as i32,
    )
}

/// Whether a run OCR read holds a secret: the redacting driver masked it, or it
/// is part of a private key (whose body lines match no rule alone).
fn run_is_secret(text: &str) -> bool {
    let key_line = |w: &str| {
        w.chars().count() >= 16
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
            && w.chars().any(|c| c.is_ascii_digit())
            && w.chars().any(|c| c.is_ascii_alphabetic())
    };
    shows_mask(text)
        || text.to_uppercase().contains("PRIVATE KEY")
        || text.split_whitespace().any(key_line)
}

/// The rectangles (tree pixels) to paint over that only the pixels reveal, and
/// every text read to find them, through `driver` (which must redact OCR text,
/// as [`crate::redacting::Redacting`] does).
///
/// - Without a tree (`root` `None`): the whole window is read, and every run
///   holding a secret (masked, a private key's marker, or a word of 16 or more
///   base64 characters mixing letters and digits, as a key's body lines are) is
///   painted with every run of its line (a token OCR split in two).
/// - With one: each text element whose value the tree read only in part (past the
///   read cap, so the redaction saw only its head), and each image element of at
///   least [`MIN_OCR_IMAGE`] (a canvas or drawing showing a token), at most
///   [`MAX_OCR_IMAGES`], the largest first, is read; one showing a secret anywhere
///   is painted whole, and one that cannot be read is painted whole too.
///
/// The driver's OCR runs are masked line by line as well as run by run
/// ([`crate::redacting`]): a token OCR split with spaces or read with look-alike
/// characters is still found.
///
/// Used by the host before a capture and by the served driver on its own machine.
/// `COMPUTER_ELEMENT_NOT_ACTIONABLE` for a capture of a window that is not on
/// screen: `detail.reason` is `occluded` for one wholly under other windows (its
/// pixels would be theirs), else `not_viewable`; `detail.not_viewable` names why.
fn not_viewable_capture(title: &str, why: &'static str) -> ComputerError {
    let (reason, what) = if why == "covered" {
        (
            "occluded",
            "windows of other apps cover all of it, so its pixels would be theirs; bring it to the front first, or read its tree (observe)",
        )
    } else {
        (
            "not_viewable",
            "it is not on screen, so it has no pixels to read; show it first (restore it, switch to its workspace), or read its tree (observe)",
        )
    };
    ComputerError::new(
        ErrorCode::ElementNotActionable,
        format!(
            "no image of window {:?}: it is not viewable ({why}) — {what}",
            deskpilot_core::sanitize::one_line(title)
        ),
    )
    .with_detail(serde_json::json!({ "reason": reason, "not_viewable": why }))
}

pub async fn ocr_secret_rects(
    driver: &dyn deskpilot_protocol::Driver,
    window: &WindowInfo,
    root: Option<&Node>,
    paint: &[Bounds],
) -> (Vec<Bounds>, Vec<String>) {
    let mut out = Vec::new();
    let mut texts = Vec::new();
    let ocr = |region: Option<Bounds>| {
        driver.ocr(OcrParams {
            window: window.handle.clone(),
            paint: paint.to_vec(),
            region,
        })
    };
    let Some(root) = root else {
        let Ok(r) = ocr(None).await else {
            return (out, texts);
        };
        for w in &r.words {
            texts.push(w.text.clone());
            if run_is_secret(&w.text) {
                // With every run of the same line: a token OCR split in two.
                let same_line =
                    |b: &Bounds| b.y < w.bounds.y + w.bounds.height && w.bounds.y < b.y + b.height;
                for n in r.words.iter().filter(|n| same_line(&n.bounds)) {
                    out.push(device_rect_to_tree(window, &n.bounds));
                }
            }
        }
        return (out, texts);
    };
    // Long texts read in part, and images big enough to hold text (a canvas, a
    // drawing): what only their pixels show.
    let big = |b: &Bounds| b.width >= MIN_OCR_IMAGE.0 && b.height >= MIN_OCR_IMAGE.1;
    let mut long: Vec<Bounds> = root
        .walk()
        .filter_map(|n| {
            let b = n.bounds.filter(|b| !b.is_empty())?;
            let text = n.value_length.is_some() && !is_secret_field(n);
            let image = n.role == Role::Image && big(&b);
            (text || image).then_some(b)
        })
        .filter(|b| root.bounds.is_none_or(|w| w.intersects(b)))
        .collect();
    long.sort_by_key(|b| std::cmp::Reverse(i64::from(b.width) * i64::from(b.height)));
    long.truncate(MAX_OCR_IMAGES);
    for b in long {
        match ocr(Some(b)).await {
            Ok(r) => {
                texts.extend(r.words.iter().map(|w| w.text.clone()));
                if r.words.iter().any(|w| run_is_secret(&w.text)) {
                    out.push(b);
                }
            }
            Err(_) => out.push(b),
        }
    }
    (out, texts)
}

/// The interactive elements of `root` that carry a ref and a box, as marks (pure).
fn marks_of(root: &Node) -> Vec<(MarkSpec, Role, String)> {
    let window = root.bounds;
    root.walk()
        .filter(|n| n.role.is_interactive() && !n.has(deskpilot_core::State::Offscreen))
        .filter(|n| match (window, n.bounds) {
            (Some(w), Some(b)) => w.intersects(&b),
            _ => true,
        })
        .filter_map(|n| {
            let r = n.ref_.clone()?;
            let b = n.bounds.filter(|b| !b.is_empty())?;
            Some((
                MarkSpec {
                    label: r,
                    bounds: b,
                },
                n.role,
                deskpilot_core::redact::display_name_of(n, 60),
            ))
        })
        .collect()
}

/// True for an OCR element's ref (`o3`) (pure).
pub fn is_ocr_ref(r: &str) -> bool {
    r.strip_prefix('o')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The Set-of-Mark boxes of `root` (tree pixels): one per interactive element that
/// carries a ref and a box inside the window and is not off screen (pure).
pub fn mark_specs(root: &Node) -> Vec<MarkSpec> {
    marks_of(root).into_iter().map(|(m, _, _)| m).collect()
}

/// The text a model reads for OCR elements: `[o3] text "OK" (ocr)` per line.
fn ocr_lines(els: &[OcrElement]) -> String {
    els.iter()
        .map(|e| {
            format!(
                "[{}] text \"{}\" (ocr)",
                e.ref_,
                deskpilot_core::sanitize::one_line(&e.text)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Host {
    /// Refuses unless the active grant allows pixels.
    fn pixels_allowed(&self) -> Result<()> {
        let allowed = self
            .policy()
            .authority
            .active()
            .is_some_and(|g| g.capture == Capture::A11yAndPixels);
        if allowed {
            return Ok(());
        }
        Err(fail(
            ErrorCode::ScopeViolation,
            "pixels are not allowed: the grant's capture is \"a11y-only\". The user allows them with `deskpilot config set capture a11y-and-pixels` (config key `capture`), then a new grant (`deskpilot revoke` ends this one; the next call issues one); the accessibility tree (observe) needs no pixels",
        ))
    }

    /// Every check before pixels of `window` are read; returns the rectangles to
    /// paint over (tree pixels) and the window's tree (`None` without one).
    ///
    /// With `search_pixels`, the pixels are also read for what only they show
    /// (secrets in a window without a tree or in long texts, deskpilot's paths in a
    /// window without a tree: [`ocr_secret_rects`]); a small read for the judge (a
    /// text at a point, whose OCR text is redacted anyway and shown to nobody but
    /// in a stale-ref message) skips that whole-window OCR.
    async fn vet_capture(
        &mut self,
        window: &WindowInfo,
        op: &str,
        search_pixels: bool,
    ) -> Result<(Vec<Bounds>, Option<Node>), ComputerError> {
        let app = window.app.clone();
        if let Err(e) = self.pixels_allowed() {
            return Err(self.refuse(e, Some(op), Some(&app)));
        }
        let en = self.enumerate().await?;
        if let Some((_, c)) = en.find(window.handle.as_str())
            && let Some(r) = self.rules.check_window(&c.facts)
        {
            return Err(self.refuse(refused(r), Some(op), Some(&app)));
        }
        // Pixels of a window that is not on screen are another window's, or none
        // (docs/ARCHITECTURE.md §8a): no image is made of them.
        let now = en.find(window.handle.as_str()).map_or(window, |(w, _)| w);
        if let Some(why) = now.not_viewable() {
            return Err(not_viewable_capture(&now.title, why));
        }
        if window.no_tree && !search_pixels {
            return Ok((Vec::new(), None));
        }
        if window.no_tree {
            // No tree to say where secrets are: the pixels are read for them, and
            // for deskpilot's own paths.
            let (rects, texts) =
                ocr_secret_rects(self.session.driver().as_ref(), window, None, &[]).await;
            if let Some(p) = texts.iter().find_map(|t| self.rules.protected_in(t)) {
                return Err(self.refuse(shows_own_files(&p), Some(op), Some(&app)));
            }
            return Ok((rects, None));
        }
        let root = self.session.peek(window).await?;
        if let Some(p) = self.rules.window_shows_protected(&root) {
            return Err(self.refuse(shows_own_files(&p), Some(op), Some(&app)));
        }
        if input_may_reach_password(&root) {
            let e = ComputerError::new(
                ErrorCode::SecureInput,
                "a password field has focus: no capture while it does; move focus elsewhere first",
            );
            return Err(self.refuse(e, Some(op), Some(&app)));
        }
        let mut paint = paint_rects(&root);
        if search_pixels {
            let (more, _) =
                ocr_secret_rects(self.session.driver().as_ref(), window, Some(&root), &paint).await;
            paint.extend(more);
        }
        Ok((paint, Some(root)))
    }

    fn audit_capture(&mut self, window: &WindowInfo, op: &str, mode: ShotMode, w: u32, h: u32) {
        self.audit(AuditRecord {
            event: Some(AuditEvent::Capture),
            app: Some(window.app.clone()),
            pid: window.pid,
            op: Some(op.into()),
            capture: Some(format!("{w}x{h} {}", mode.as_str())),
            status: Some("executed".into()),
            ..AuditRecord::default()
        });
    }

    /// The basis of an image of device area `g` at `scale` image pixels per device
    /// pixel, under the grant's current revision.
    fn basis_of(&self, g: Bounds, scale: f64) -> Basis {
        Basis {
            revision: self.revision(),
            x: g.x,
            y: g.y,
            width: g.width,
            height: g.height,
            scale,
        }
    }

    /// The revision of the active grant.
    pub(super) fn revision(&self) -> u64 {
        self.policy()
            .authority
            .active()
            .map(|g| g.revision)
            .unwrap_or_default()
    }

    /// Reads OCR elements of `window` (already vetted) — of the tree rectangle
    /// `region` only, when given — and keeps them as the window's `o` refs: they
    /// replace the previous ones, unless `append` adds them after those.
    async fn read_ocr(
        &mut self,
        window: &WindowInfo,
        paint: Vec<Bounds>,
        region: Option<Bounds>,
        append: bool,
    ) -> Result<(Vec<OcrElement>, Vec<String>, u64), ComputerError> {
        let r = self
            .session
            .driver()
            .ocr(OcrParams {
                window: window.handle.clone(),
                paint,
                region,
            })
            .await?;
        // The window's whole geometry, as the pipeline re-measures it (the OCR
        // boxes are absolute device pixels, taken relative to it).
        let basis = self
            .basis_of(window.device_bounds.unwrap_or(r.bounds), 1.0)
            .to_string();
        let ws = self
            .session
            .state_mut()
            .per_window
            .entry(window.handle.0.clone())
            .or_default();
        if !append {
            ws.ocr.clear();
        }
        let first = ws.ocr.len();
        let els: Vec<OcrElement> = r
            .words
            .iter()
            .enumerate()
            .map(|(i, OcrWord { text, bounds, .. })| OcrElement {
                ref_: format!("o{}", first + i + 1),
                text: text.clone(),
                bounds: *bounds,
                basis: basis.clone(),
            })
            .collect();
        ws.ocr.extend(els.iter().cloned());
        ws.info.get_or_insert_with(|| window.clone());
        let mut notes = r.notes;
        notes.push(format!(
            "read from pixels by local OCR (tesseract {}), {} ms; text may be misread",
            r.languages, r.elapsed_ms
        ));
        Ok((els, notes, r.elapsed_ms))
    }

    /// After a tree observe with pixels allowed: the text inside image and canvas
    /// elements that have no children (a chart, a drawing area, a picture of text),
    /// read by OCR from those rectangles only and appended to the observation as
    /// `o` elements, marked as such. At most [`MAX_OCR_IMAGES`] of the largest, each
    /// at least [`MIN_OCR_IMAGE`] pixels; a window the capture rules refuse gets a
    /// line saying why instead.
    pub(super) async fn ocr_images(
        &mut self,
        window: &WindowInfo,
        obs: &mut crate::session::Observation,
    ) -> Result<()> {
        let Some(last) = self
            .session
            .state()
            .per_window
            .get(window.handle.as_str())
            .and_then(|w| w.last.clone())
        else {
            return Ok(());
        };
        let mut images: Vec<(String, Bounds)> = last
            .walk()
            .filter(|n| {
                n.role == Role::Image
                    && n.children.is_empty()
                    && n.child_count == 0
                    && !n.has(deskpilot_core::State::Offscreen)
            })
            .filter_map(|n| {
                let b = n.bounds?;
                (b.width >= MIN_OCR_IMAGE.0 && b.height >= MIN_OCR_IMAGE.1)
                    .then(|| (n.ref_.clone().unwrap_or_default(), b))
            })
            .collect();
        if images.is_empty() {
            return Ok(());
        }
        images.sort_by_key(|(_, b)| std::cmp::Reverse(i64::from(b.width) * i64::from(b.height)));
        images.truncate(MAX_OCR_IMAGES);
        let paint = match self.vet_capture(window, "observe", true).await {
            Ok((paint, _)) => paint,
            Err(e) => {
                obs.text.push_str(&format!(
                    "\n· {} image element(s) show no tree inside; their pixels were not read: {}",
                    images.len(),
                    e.message
                ));
                return Ok(());
            }
        };
        let mut first = true;
        for (r, b) in images {
            let (els, _, ms) = match self.read_ocr(window, paint.clone(), Some(b), !first).await {
                Ok(x) => x,
                Err(e) => {
                    obs.text.push_str(&format!(
                        "\n· text in [{r}] not read from pixels: {}",
                        e.message
                    ));
                    continue;
                }
            };
            first = false;
            self.audit_capture(
                window,
                "observe",
                ShotMode::Ocr,
                b.width as u32,
                b.height as u32,
            );
            obs.text.push_str(&format!(
                "\n· text in [{r}] image, read from pixels (ocr, {ms} ms; may be misread):"
            ));
            if els.is_empty() {
                obs.text.push_str(" none");
            }
            for e in &els {
                obs.text.push_str(&format!(
                    "\n  [{}] text \"{}\" (ocr)",
                    e.ref_,
                    deskpilot_core::sanitize::one_line(&e.text)
                ));
            }
        }
        obs.tokens = deskpilot_core::tokens::count(&obs.text);
        Ok(())
    }

    /// A screenshot of `target` (binding the grant to it like `observe`).
    ///
    /// Errors: `COMPUTER_SCOPE_VIOLATION` when pixels are not allowed (the message
    /// names the setting) or the window shows deskpilot's own files;
    /// `COMPUTER_SECURE_INPUT` while a password field has focus; the window's
    /// refusals; the driver's errors (`COMPUTER_PLATFORM_UNSUPPORTED` without
    /// tesseract for `ocr`).
    pub async fn screenshot(
        &mut self,
        target: &Target,
        mode: ShotMode,
        max_side: Option<u32>,
    ) -> Result<Screenshot> {
        let (en, _) = self.begin().await?;
        let window = self.bind_target(target, &en).await?;
        let (paint, _) = self.vet_capture(&window, "screenshot", true).await?;
        let window_ref = self.session.window_ref(&window.handle);
        // Marks are the refs observe shows: observe first (it assigns them).
        let mut marks = Vec::new();
        if mode == ShotMode::Marks && !window.no_tree {
            self.session
                .observe_window(
                    &window,
                    &ObserveOptions::default(),
                    std::time::Instant::now(),
                )
                .await?;
            if let Some(last) = self
                .session
                .state()
                .per_window
                .get(window.handle.as_str())
                .and_then(|w| w.last.as_ref())
            {
                marks = marks_of(last);
            }
        }
        let mut ocr = None;
        if mode == ShotMode::Ocr {
            ocr = Some(self.read_ocr(&window, paint.clone(), None, false).await?);
        }
        let mut params = CaptureParams {
            window: window.handle.clone(),
            max_side: Some(max_side.unwrap_or(DEFAULT_MAX_SIDE)),
            paint,
            marks: marks.iter().map(|(m, _, _)| m.clone()).collect(),
        };
        let mut shot = self.session.driver().capture(params.clone()).await?;
        // The tree is read again after the capture: a secret field that appeared
        // or moved in between is painted too, by a second capture.
        if !window.no_tree {
            let after = self.session.peek(&window).await?;
            let missed: Vec<Bounds> = paint_rects(&after)
                .into_iter()
                .filter(|r| !params.paint.contains(r))
                .collect();
            if input_may_reach_password(&after) {
                let e = ComputerError::new(
                    ErrorCode::SecureInput,
                    "a password field took focus during the capture: no capture while it has focus",
                );
                return Err(self.refuse(e, Some("screenshot"), Some(&window.app)));
            }
            if !missed.is_empty() {
                params.paint.extend(missed);
                shot = self.session.driver().capture(params.clone()).await?;
            }
        }
        let painted = params.paint.len();
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot.png_base64.as_bytes())
            .map_err(|e| ComputerError::internal(format!("the driver sent a bad image: {e}")))?;
        // The image starts at the captured area's corner. When that is the
        // window's (a window cut off only at the right or bottom of the screen),
        // the basis is the whole window as the pipeline re-measures it; a window
        // cut off at the left or top keeps the captured area, which a click-at
        // then finds stale rather than aimed wrong.
        let g = match window.device_bounds {
            Some(d) if (d.x, d.y) == (shot.bounds.x, shot.bounds.y) => d,
            _ => shot.bounds,
        };
        let basis = self.basis_of(g, shot.image_scale);
        let mut notes = shot.notes.clone();
        if painted > 0 {
            notes.push(format!("{painted} redacted field(s) painted over"));
        }
        let to_image = |b: &Bounds| {
            let f = |v: i32, o: i32| ((f64::from(v - o)) * shot.image_scale).round() as i32;
            let (x0, y0) = (f(b.x, shot.bounds.x), f(b.y, shot.bounds.y));
            let (x1, y1) = (
                f(b.x + b.width, shot.bounds.x),
                f(b.y + b.height, shot.bounds.y),
            );
            Bounds::new(x0, y0, x1 - x0, y1 - y0)
        };
        let (legend, text) = match (mode, ocr) {
            (ShotMode::Ocr, Some((els, more, _))) => {
                notes.extend(more);
                let legend = els
                    .iter()
                    .map(|e| LegendEntry {
                        ref_: e.ref_.clone(),
                        role: "text".into(),
                        name: e.text.clone(),
                        bounds: to_image(&e.bounds),
                    })
                    .collect();
                (legend, ocr_lines(&els))
            }
            _ => {
                let legend: Vec<LegendEntry> = marks
                    .iter()
                    .zip(&shot.marks)
                    .map(|((_, role, name), drawn)| LegendEntry {
                        ref_: drawn.label.clone(),
                        role: role.to_string(),
                        name: name.clone(),
                        bounds: drawn.bounds,
                    })
                    .collect();
                let text = legend
                    .iter()
                    .map(|e| format!("[{}] {} {}", e.ref_, e.role, e.name))
                    .collect::<Vec<_>>()
                    .join("\n");
                (legend, text)
            }
        };
        self.audit_capture(&window, "screenshot", mode, shot.width, shot.height);
        self.stamp(&window, None);
        self.after_call()?;
        Ok(Screenshot {
            window_ref,
            window,
            mode,
            png,
            width: shot.width,
            height: shot.height,
            basis: basis.to_string(),
            toolkit_scale: shot.toolkit_scale,
            image_tokens: deskpilot_core::tokens::image_tokens(shot.width, shot.height),
            legend,
            text,
            notes,
        })
    }

    /// The observation of a window with no tree: its OCR elements when pixels are
    /// allowed (the caller has bound it). Without pixels the read fails with the
    /// driver's `COMPUTER_ACCESSIBILITY_DISABLED`, whose message says how to allow
    /// them.
    pub(super) async fn observe_pixels(
        &mut self,
        window: &WindowInfo,
    ) -> Result<crate::session::Observation> {
        let started = std::time::Instant::now();
        let (paint, _) = self.vet_capture(window, "observe", true).await?;
        let (els, notes, _) = self.read_ocr(window, paint, None, false).await?;
        let window_ref = self.session.window_ref(&window.handle);
        let b = window.device_bounds.or(window.bounds).unwrap_or_default();
        self.audit_capture(
            window,
            "observe",
            ShotMode::Ocr,
            b.width as u32,
            b.height as u32,
        );
        let mut text = format!(
            "[{window_ref}] window \"{}\" · no accessibility tree: {} element(s) read from pixels (ocr); act on them by ref (a pointer click at the text's centre)",
            deskpilot_core::sanitize::one_line(&window.title),
            els.len()
        );
        for line in ocr_lines(&els).lines() {
            text.push_str("\n  ");
            text.push_str(line);
        }
        for n in &notes {
            text.push_str("\n· ");
            text.push_str(n);
        }
        let tokens = deskpilot_core::tokens::count(&text);
        // The OCR runs as elements of the window: text read from pixels.
        let elements = std::iter::once(crate::session::ShownElement {
            ref_: window_ref.clone(),
            role: window.role,
            name: deskpilot_core::sanitize::one_line(&window.title),
            value: None,
            states: Default::default(),
            parent: None,
            bounds: Some(b),
        })
        .chain(els.iter().map(|e| crate::session::ShownElement {
            ref_: e.ref_.clone(),
            role: Role::Text,
            name: deskpilot_core::sanitize::one_line(&e.text),
            value: None,
            states: Default::default(),
            parent: Some(window_ref.clone()),
            bounds: Some(e.bounds),
        }))
        .collect();
        Ok(crate::session::Observation {
            elements,
            window_ref,
            window: window.clone(),
            text,
            tokens,
            shown: els.len(),
            omitted: 0,
            stats: Default::default(),
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            grant: None,
            basis: None,
        })
    }

    /// The text OCR reads now in the device rectangle `area` of `window` (no
    /// refs kept): the run whose box holds `point`; empty when pixels are not
    /// allowed or no text is read at the point itself.
    async fn text_near(&mut self, window: &WindowInfo, area: Bounds, point: (i32, i32)) -> String {
        if self.pixels_allowed().is_err() {
            return String::new();
        }
        let (x0, y0) = window.device_to_tree(f64::from(area.x), f64::from(area.y));
        let (x1, y1) = window.device_to_tree(
            f64::from(area.x + area.width),
            f64::from(area.y + area.height),
        );
        let region = Bounds::new(
            x0.floor() as i32,
            y0.floor() as i32,
            (x1 - x0).ceil() as i32,
            (y1 - y0).ceil() as i32,
        );
        let paint = match self.vet_capture(window, "read_text_at_point", false).await {
            Ok((paint, _)) => paint,
            Err(_) => return String::new(),
        };
        let Ok(r) = self
            .session
            .driver()
            .ocr(OcrParams {
                window: window.handle.clone(),
                paint,
                region: Some(region),
            })
            .await
        else {
            return String::new();
        };
        // Only text whose own box holds the point (2 px of slack for glyph
        // edges): a label beside an icon-only button is not that button's name.
        let (px, py) = point;
        let holds = |b: &Bounds| {
            px >= b.x - 2 && py >= b.y - 2 && px < b.x + b.width + 2 && py < b.y + b.height + 2
        };
        r.words
            .iter()
            .find(|w| holds(&w.bounds))
            .map(|w| w.text.clone())
            .unwrap_or_default()
    }

    /// The text OCR reads now around the device point of a click in a window
    /// without a tree (a 240×72 px area centred on it), for the judge.
    pub(super) async fn text_at_point(&mut self, window: &WindowInfo, point: (i32, i32)) -> String {
        let area = Bounds::new(point.0 - 120, point.1 - 36, 240, 72);
        self.text_near(window, area, point).await
    }

    /// Acts on the OCR element `r` (`o3`) of the bound window: a pointer gesture at
    /// its centre through the pipeline, judged by its text as a button of that name
    /// would be. Only click, double click and right click.
    ///
    /// Errors: `COMPUTER_STALE_REF` for an `o` ref not read in the bound window (OCR
    /// refs live until the next OCR read of it); `COMPUTER_INVALID_ARGUMENT` for
    /// another op; those of [`Host::pointer`].
    pub(super) async fn act_ocr(&mut self, r: &str, op: Op) -> Result<KeysOutcome> {
        let action = match op {
            Op::Click => PointerAction::Click,
            Op::DoubleClick => PointerAction::DoubleClick,
            Op::RightClick => PointerAction::RightClick,
            other => {
                return Err(fail(
                    ErrorCode::InvalidArgument,
                    format!(
                        "an OCR element takes click, double_click or right_click, not {}: it is text read from pixels, not an element with actions",
                        other.as_str()
                    ),
                ));
            }
        };
        let el = self
            .bound_handle()
            .and_then(|h| self.session.state().per_window.get(&h).cloned())
            .and_then(|ws| ws.ocr.into_iter().find(|e| e.ref_ == r))
            .ok_or_else(|| {
                ComputerError::new(
                    ErrorCode::StaleRef,
                    format!(
                        "{r} is not an OCR element of the bound window; observe it (or screenshot --ocr) again"
                    ),
                )
            })?;
        let basis = Basis::parse(&el.basis)?;
        // The text is read again where it was: a label that changed since (a
        // "Cancel" that became "Delete all") is not clicked under its old name.
        let h = self.bound_handle().unwrap_or_default();
        let en = self.enumerate().await?;
        let window = en.find(&h).map(|(w, _)| w.clone()).ok_or_else(|| {
            ComputerError::new(
                ErrorCode::StaleBasis,
                "the bound window is gone; observe again",
            )
        })?;
        let b = el.bounds;
        let centre = (b.x + b.width / 2, b.y + b.height / 2);
        // Wide enough to read a longer label that replaced it whole.
        let area = Bounds::new(b.x - 48, b.y - 8, b.width + 96, b.height + 16);
        let now = self.text_near(&window, area, centre).await;
        let same = |a: &str, b: &str| {
            let f = |t: &str| {
                t.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_lowercase()
            };
            f(a) == f(b)
        };
        if !same(&now, &el.text) {
            return Err(ComputerError::new(
                ErrorCode::StaleRef,
                if now.is_empty() {
                    format!(
                        "{r} was \"{}\", and nothing can be read there now; observe again",
                        deskpilot_core::sanitize::one_line(&el.text)
                    )
                } else {
                    format!(
                        "{r} was \"{}\" and now reads \"{}\"; observe again",
                        deskpilot_core::sanitize::one_line(&el.text),
                        deskpilot_core::sanitize::one_line(&now)
                    )
                },
            ));
        }
        let x = f64::from(el.bounds.x - basis.x) + f64::from(el.bounds.width) / 2.0;
        let y = f64::from(el.bounds.y - basis.y) + f64::from(el.bounds.height) / 2.0;
        let mut out = self
            .pointer_seen(&basis, x, y, action, Some(el.text.clone()))
            .await?;
        out.text = out.text.replacen(
            "via pointer",
            &format!(
                "at {r} \"{}\" via pointer(ocr)",
                deskpilot_core::sanitize::one_line(&el.text)
            ),
            1,
        );
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskpilot_core::State;

    #[test]
    fn secret_fields_and_masked_texts_are_painted_over_and_nothing_else() {
        let mut root = Node::new("w", Role::Dialog, "Log in");
        root.bounds = Some(Bounds::new(0, 0, 400, 300));
        let mut pw = Node::new("p", Role::Textbox, "Password");
        pw.states.insert(State::Password);
        pw.value = Some("hunter22".into());
        pw.bounds = Some(Bounds::new(10, 10, 200, 30));
        let mut token = Node::new(
            "t",
            Role::Text,
            "token ghp_0123456789abcdefghijABCDEFGHIJ012345",
        );
        token.bounds = Some(Bounds::new(10, 50, 300, 20));
        let mut ok = Node::new("b", Role::Button, "OK");
        ok.bounds = Some(Bounds::new(10, 100, 80, 30));
        // As the redacting driver hands it over: already masked.
        let mut masked = Node::new("m", Role::Text, "code [masked code, 6 digits]");
        masked.bounds = Some(Bounds::new(10, 150, 300, 20));
        root.children = vec![pw, token, ok, masked];
        let mut rects = paint_rects(&root);
        rects.sort_by_key(|b| b.y);
        assert_eq!(
            rects,
            vec![
                Bounds::new(10, 10, 200, 30),
                Bounds::new(10, 50, 300, 20),
                Bounds::new(10, 150, 300, 20)
            ]
        );
    }
}
