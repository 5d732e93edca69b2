//! Fitting a tree of lines into a hard token budget, by priority.
//!
//! Owns the one algorithm render and diff use to stay under `max_tokens`: lines carry
//! a priority class and a parent; the highest-priority lines are kept first, each with
//! the ancestors it needs for structure; the assembled text is then measured once with
//! [`crate::tokens::count`] and trimmed until it fits. The ceiling is exact: a
//! [`Fitted`] text never counts more than the budget, even when the budget cannot hold
//! a single line (the result is then empty).

use std::collections::HashMap;

use crate::sanitize;
use crate::tokens;

/// One line that may be kept or cut.
#[derive(Debug)]
pub(crate) struct Line {
    /// The line, indentation included, without a line break.
    pub text: String,
    /// A line printed after this line's kept descendants and kept or cut with it
    /// (`… 280 more items, use observe scope=e9`).
    pub glued: Option<String>,
    /// The line this one hangs under; it is kept whenever this one is. Always an
    /// earlier index (lines are in pre-order).
    pub parent: Option<usize>,
    /// Priority: 0 is kept first.
    pub class: u8,
    /// The ref to suggest for `scope=` when lines under this one are cut.
    pub hint: Option<String>,
}

/// How much of the closing note to print; tried in this order until one fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FooterLevel {
    Full,
    Short,
    Tiny,
    Off,
}

impl FooterLevel {
    fn next(self) -> Self {
        match self {
            FooterLevel::Full => FooterLevel::Short,
            FooterLevel::Short => FooterLevel::Tiny,
            FooterLevel::Tiny | FooterLevel::Off => FooterLevel::Off,
        }
    }
}

/// The closing note for `cut` cut lines (with a `scope=` hint) at a level.
pub(crate) type FooterFn<'a> = dyn Fn(usize, Option<&str>, FooterLevel) -> Option<String> + 'a;

/// The fitted text and what it kept.
#[derive(Debug)]
pub(crate) struct Fitted {
    pub text: String,
    /// `tokens::count(&text)`, never above the budget.
    pub tokens: usize,
    /// Per line: printed or not.
    pub kept: Vec<bool>,
    /// Lines not printed; a tail line that did not fit counts as one (so the footer
    /// states it).
    pub cut: usize,
    /// The `scope=` hint the footer was built with.
    pub hint: Option<String>,
}

/// Token costs of lines, measured once each and only when needed.
struct Costs<'a> {
    lines: &'a [Line],
    cache: Vec<Option<usize>>,
}

impl<'a> Costs<'a> {
    fn new(lines: &'a [Line]) -> Self {
        Costs {
            lines,
            cache: vec![None; lines.len()],
        }
    }

    /// Tokens of the line and its glued line, each with its line break.
    fn get(&mut self, i: usize) -> usize {
        if let Some(c) = self.cache[i] {
            return c;
        }
        let l = &self.lines[i];
        let mut c = line_tokens(&l.text);
        if let Some(g) = &l.glued {
            c += line_tokens(g);
        }
        self.cache[i] = Some(c);
        c
    }

    /// A cheap guess that is almost always below the true cost (no o200k token of
    /// snapshot text spans more than about ten bytes outside indentation); used only
    /// to skip measuring lines that cannot fit.
    fn lower_bound(&self, i: usize) -> usize {
        self.lines[i].text.trim_start().len() / 10
    }
}

/// `s` cut (at a grapheme boundary, trailing spaces dropped) and ended with `…` so
/// that it costs at most `max_tokens` as a line; `s` itself when it fits; `None` when
/// not even one character fits.
pub(crate) fn shorten_line(s: &str, max_tokens: usize) -> Option<String> {
    if line_tokens(s) <= max_tokens {
        return Some(s.to_string());
    }
    let head = |chars: usize| {
        let end = sanitize::head_end(s, chars).unwrap_or(s.len());
        let kept = s[..end].trim_end();
        (!kept.is_empty()).then(|| format!("{kept}…"))
    };
    // The longest head that fits: binary search over its length in chars (the token
    // count grows with the head, give or take a token where a cut splits a word).
    let (mut lo, mut hi) = (1, s.chars().count());
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match head(mid) {
            Some(h) if line_tokens(&h) <= max_tokens => {
                best = Some(h);
                lo = mid + 1;
            }
            Some(_) => hi = mid,
            None => lo = mid + 1,
        }
    }
    best
}

fn line_tokens(s: &str) -> usize {
    let mut owned = String::with_capacity(s.len() + 1);
    owned.push_str(s);
    owned.push('\n');
    tokens::count(&owned)
}

struct Selection {
    kept: Vec<bool>,
    /// Kept lines in the order they were kept; every line comes after its ancestors.
    order: Vec<usize>,
}

/// Lines in a row that [`select`] measures and finds too big before it stops looking:
/// once this many candidates in priority order have failed, what is left of the budget
/// is a sliver, and measuring every remaining line of a 50,000-element window to fill
/// it would cost more than the render itself.
const SELECT_MAX_MISSES: usize = 256;

/// Greedy by (class, position): keep a line when it and its not-yet-kept ancestors
/// fit in what is left; stop after [`SELECT_MAX_MISSES`] failures in a row.
fn select(lines: &[Line], costs: &mut Costs<'_>, budget: usize) -> Selection {
    let n = lines.len();
    let mut by_priority: Vec<usize> = (0..n).collect();
    by_priority.sort_by_key(|&i| (lines[i].class, i));
    let mut sel = Selection {
        kept: vec![false; n],
        order: Vec::with_capacity(n.min(4096)),
    };
    let mut left = budget;
    let mut chain = Vec::new();
    let mut misses = 0;
    for i in by_priority {
        if left == 0 || misses >= SELECT_MAX_MISSES {
            break;
        }
        if sel.kept[i] || costs.lower_bound(i) > left {
            continue;
        }
        chain.clear();
        let mut cur = Some(i);
        while let Some(j) = cur.filter(|&j| !sel.kept[j]) {
            chain.push(j);
            cur = lines[j].parent;
        }
        let mut cost = 0;
        for &j in &chain {
            cost += costs.get(j);
            if cost > left {
                break;
            }
        }
        if cost <= left {
            left -= cost;
            misses = 0;
            for &j in chain.iter().rev() {
                sel.kept[j] = true;
                sel.order.push(j);
            }
        } else {
            misses += 1;
        }
    }
    sel
}

/// Where to point `scope=` after a cut: the largest cut subtree whose top line has a
/// hint (when it holds more than one line), else the kept line with the most cut lines
/// directly under it.
fn cut_hint(lines: &[Line], kept: &[bool]) -> Option<String> {
    // Lines are in pre-order, so a parent's cut root is known before its children.
    let mut root_of: Vec<usize> = (0..lines.len()).collect();
    let mut sizes: HashMap<usize, usize> = HashMap::new();
    let mut under_kept: HashMap<usize, usize> = HashMap::new();
    for i in (0..lines.len()).filter(|&i| !kept[i]) {
        match lines[i].parent {
            Some(p) if !kept[p] => root_of[i] = root_of[p],
            Some(p) => *under_kept.entry(p).or_default() += 1,
            None => {}
        }
        *sizes.entry(root_of[i]).or_default() += 1;
    }
    let best = |counts: HashMap<usize, usize>, min: usize| {
        counts
            .into_iter()
            .filter(|&(j, c)| c >= min && lines[j].hint.is_some())
            .max_by_key(|&(j, c)| (c, std::cmp::Reverse(j)))
            .and_then(|(j, _)| lines[j].hint.clone())
    };
    best(sizes, 2).or_else(|| best(under_kept, 1))
}

fn assemble(
    lines: &[Line],
    kept: &[bool],
    head: Option<&str>,
    tail: Option<&str>,
    footer: Option<&str>,
) -> String {
    let mut out = String::new();
    let mut push = |s: &str| {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(s);
    };
    if let Some(h) = head {
        push(h);
    }
    let mut open: Vec<usize> = Vec::new();
    for (i, l) in lines.iter().enumerate().filter(|&(i, _)| kept[i]) {
        while let Some(&top) = open.last() {
            if Some(top) == l.parent {
                break;
            }
            open.pop();
            if let Some(g) = &lines[top].glued {
                push(g);
            }
        }
        push(&l.text);
        open.push(i);
    }
    while let Some(top) = open.pop() {
        if let Some(g) = &lines[top].glued {
            push(g);
        }
    }
    if let Some(t) = tail {
        push(t);
    }
    if let Some(f) = footer {
        push(f);
    }
    out
}

/// Fits `head` (first line), `lines`, `tail` and the footer into `budget` tokens.
///
/// Everything is printed when it fits. Otherwise the footer is reserved first (the
/// fullest [`FooterLevel`] that fits), then `tail`, then `head`, then lines by
/// priority. A `head` that does not fit in what is left is shortened
/// ([`shorten_line`]); it is dropped only when not even one character fits, and then
/// no line fits either, so the footer states a cut. A dropped `tail` counts as a cut
/// line. When something is cut and not even the shortest footer fits, the text is
/// empty: a part is never printed as if it were the whole.
///
/// When a cheap lower bound says everything may fit, the whole text is measured once
/// and returned if it does. Otherwise lines are measured one by one to choose them,
/// the joined text is measured once, and if it is still over (line counts are
/// additive in practice, see [`crate::tokens::count`]), the most recently kept lines
/// are dropped, then the head, the tail, and shorter footers, until it fits.
pub(crate) fn fit(
    lines: &[Line],
    head: Option<&str>,
    tail: Option<&str>,
    footer: &FooterFn<'_>,
    budget: usize,
) -> Fitted {
    let n = lines.len();
    let mut costs = Costs::new(lines);
    let head_t = head.map_or(0, line_tokens);
    let tail_t = tail.map_or(0, line_tokens);
    let tail_line = usize::from(tail.is_some());

    let mut everything = None;
    let whole_footer = footer(0, None, FooterLevel::Full);
    let whole_footer_t = whole_footer.as_deref().map_or(0, tokens::count);
    let lower: usize = (0..n).map(|i| costs.lower_bound(i)).sum();
    if lower.saturating_add(head_t + tail_t + whole_footer_t) <= budget {
        // Probably all of it: one measurement of the whole text instead of one per line.
        let kept = vec![true; n];
        let text = assemble(lines, &kept, head, tail, whole_footer.as_deref());
        let t = tokens::count(&text);
        if t <= budget {
            return Fitted {
                text,
                tokens: t,
                kept,
                cut: 0,
                hint: None,
            };
        }
    }
    if head_t + tail_t + whole_footer_t <= budget {
        let sel = select(lines, &mut costs, budget - head_t - tail_t - whole_footer_t);
        if sel.order.len() == n {
            everything = Some((sel, head.is_some(), tail.is_some(), FooterLevel::Full));
        }
    }
    let mut short_head: Option<String> = None;
    let (mut sel, mut with_head, mut with_tail, mut level) = match everything {
        Some(e) => e,
        None => {
            let widest = lines
                .iter()
                .filter_map(|l| l.hint.as_deref())
                .max_by_key(|h| h.len());
            let mut level = FooterLevel::Off;
            let mut reserve = 0;
            for lv in [FooterLevel::Full, FooterLevel::Short, FooterLevel::Tiny] {
                let t = footer(n + tail_line, widest, lv).map_or(0, |f| tokens::count(&f));
                if t <= budget {
                    level = lv;
                    reserve = t;
                    break;
                }
            }
            let mut left = budget - reserve;
            let with_tail = tail.is_some() && tail_t <= left;
            if with_tail {
                left -= tail_t;
            }
            let mut with_head = head.is_some() && head_t <= left;
            if with_head {
                left -= head_t;
            } else if let Some(short) = head.and_then(|h| shorten_line(h, left)) {
                left -= line_tokens(&short);
                short_head = Some(short);
                with_head = true;
            }
            (select(lines, &mut costs, left), with_head, with_tail, level)
        }
    };

    let nothing = |n: usize| Fitted {
        text: String::new(),
        tokens: 0,
        kept: vec![false; n],
        cut: n + tail_line,
        hint: None,
    };
    loop {
        let cut = n - sel.order.len() + usize::from(tail.is_some() && !with_tail);
        if cut > 0 && level == FooterLevel::Off {
            // Something is cut and no note saying so fits: print nothing rather than
            // a part that looks whole.
            return nothing(n);
        }
        let hint = if cut > 0 {
            cut_hint(lines, &sel.kept)
        } else {
            None
        };
        let foot = footer(cut, hint.as_deref(), level);
        let text = assemble(
            lines,
            &sel.kept,
            short_head.as_deref().or(head).filter(|_| with_head),
            tail.filter(|_| with_tail),
            foot.as_deref(),
        );
        let t = tokens::count(&text);
        if t <= budget {
            return Fitted {
                text,
                tokens: t,
                kept: sel.kept,
                cut,
                hint,
            };
        }
        let excess = t - budget;
        if !sel.order.is_empty() {
            let mut freed = 0;
            while freed < excess {
                let Some(i) = sel.order.pop() else { break };
                sel.kept[i] = false;
                freed += costs.get(i);
            }
        } else if with_head {
            with_head = false;
        } else if with_tail {
            with_tail = false;
        } else if level != FooterLevel::Off {
            level = level.next();
        } else {
            // Nothing left to drop; only possible with a budget of zero or text that
            // cannot be measured under it.
            return nothing(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, parent: Option<usize>, class: u8) -> Line {
        Line {
            text: text.to_string(),
            glued: None,
            parent,
            class,
            hint: None,
        }
    }

    fn no_footer(cut: usize, _: Option<&str>, level: FooterLevel) -> Option<String> {
        (cut > 0 && level != FooterLevel::Off).then(|| format!("(cut {cut})"))
    }

    #[test]
    fn keeps_all_when_it_fits() {
        let lines = vec![line("root", None, 0), line("  child", Some(0), 3)];
        let f = fit(&lines, Some("head"), None, &no_footer, 100);
        assert_eq!(f.text, "head\nroot\n  child");
        assert_eq!(f.cut, 0);
        assert_eq!(f.tokens, tokens::count(&f.text));
    }

    #[test]
    fn keeps_priority_and_ancestors() {
        let lines = vec![
            line("root", None, 0),
            line("  box", Some(0), 3),
            line("    plain words here and more of them", Some(1), 2),
            line("    [e9] button \"OK\"", Some(1), 1),
        ];
        let budget = tokens::count("root\n  box\n    [e9] button \"OK\"\n(cut 1)");
        let f = fit(&lines, None, None, &no_footer, budget);
        assert_eq!(f.text, "root\n  box\n    [e9] button \"OK\"\n(cut 1)");
        assert_eq!(f.kept, vec![true, true, false, true]);
    }

    #[test]
    fn zero_budget_is_empty() {
        let lines = vec![line("root", None, 0)];
        let f = fit(&lines, Some("head"), None, &no_footer, 0);
        assert_eq!(f.text, "");
        assert_eq!(f.tokens, 0);
    }

    #[test]
    fn trims_when_lines_do_not_add_up() {
        // `!` + line break + `/` tokenizes as one more token than the two lines alone,
        // so the per-line estimate undercounts and the measured text must be trimmed.
        let lines: Vec<Line> = (0..10)
            .map(|i| line(if i % 2 == 0 { "ok!" } else { "/a" }, None, 1))
            .collect();
        let sum: usize = lines.iter().map(|l| line_tokens(&l.text)).sum();
        let joined: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert!(tokens::count(&joined.join("\n")) > sum, "precondition");
        let f = fit(&lines, None, None, &no_footer, sum);
        assert!(f.tokens <= sum);
        assert_eq!(f.tokens, tokens::count(&f.text));
        assert!(f.cut > 0);
        assert!(f.text.ends_with(&format!("(cut {})", f.cut)));
    }

    #[test]
    fn shortens_lines_to_a_token_count() {
        let s = "app editor pid=4242 · window \"notes.txt - Editor\" [active]";
        assert_eq!(shorten_line(s, 100).as_deref(), Some(s));
        let short = shorten_line(s, 8).expect("something fits");
        assert!(short.ends_with('…'), "{short}");
        assert!(line_tokens(&short) <= 8);
        assert!(s.starts_with(short.trim_end_matches('…')));
        assert_eq!(shorten_line(s, 1), None);
    }

    #[test]
    fn a_dropped_tail_is_counted_as_cut() {
        let lines = vec![line("root", None, 0)];
        let footer = |cut: usize, _: Option<&str>, level: FooterLevel| {
            (cut > 0 && level != FooterLevel::Off).then(|| format!("(cut {cut})"))
        };
        let tail = "focus: e12345 and a long explanation that does not fit";
        let budget = tokens::count("root\n(cut 1)");
        let f = fit(&lines, None, Some(tail), &footer, budget);
        assert_eq!(f.text, "root\n(cut 1)");
        assert_eq!(f.cut, 1);
    }

    #[test]
    fn glued_lines_follow_subtrees() {
        let mut list = line("  list", Some(0), 3);
        list.glued = Some("    … 5 more items".to_string());
        let lines = vec![
            line("root", None, 0),
            list,
            line("    item", Some(1), 1),
            line("  after", Some(0), 1),
        ];
        let f = fit(&lines, None, None, &no_footer, 1000);
        assert_eq!(
            f.text,
            "root\n  list\n    item\n    … 5 more items\n  after"
        );
    }
}
