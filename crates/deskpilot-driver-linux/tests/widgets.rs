//! Real-application tests: gtk3-widget-factory (GTK 3) and gnome-calculator (GTK 4).

#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::time::Duration;

use common::{desk, dump, usable};
use deskpilot_core::{Op, Role, State};
use deskpilot_protocol::Driver;
use deskpilot_protocol::types::{ActParams, ActStatus, Channel, Settle};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toggling_a_check_button_flips_its_checked_state() {
    let d = desk().await;
    let (_pid, w) = d.launch(&["gtk3-widget-factory"], "", WAIT).await;
    let boxes = d.find(&w, "checkbutton", Some(Role::Checkbox)).await;
    let target = boxes
        .iter()
        .find(|n| usable(n))
        .unwrap_or_else(|| panic!("an enabled, visible check button: {boxes:#?}"))
        .clone();
    let was = target.has(State::Checked);

    let r = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: target.handle.clone(),
            op: Op::Toggle,
            value: None,
            settle: Some(Settle::default()),
        })
        .await
        .expect("toggle");
    assert_eq!(r.status, ActStatus::Executed, "{r:?}");
    assert_eq!(r.channel, Channel::Action);
    assert!(r.method.to_lowercase().contains("click"), "{r:?}");
    assert!(
        r.settle.is_some_and(|s| s.events > 0),
        "state-changed events expected: {r:?}"
    );

    let snap = d.snapshot(&w).await;
    let now = snap
        .root
        .walk()
        .find(|n| n.handle == target.handle)
        .expect("the same check button")
        .has(State::Checked);
    assert_eq!(now, !was, "checked should flip from {was}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calculator_adds_seven_and_one_by_clicking_found_buttons() {
    let d = desk().await;
    let (_pid, w) = d.launch(&["gnome-calculator"], "calculator", WAIT).await;
    let snap = d.snapshot(&w).await;
    let mut text = String::new();
    dump(&snap.root, 0, &mut text);

    for key in ["7", "+", "1", "="] {
        let buttons = d.find(&w, key, Some(Role::Button)).await;
        // GTK 4.8 names calculator buttons "7 7" (label twice).
        let b = buttons
            .iter()
            .find(|n| n.name.split_whitespace().next() == Some(key) && usable(n))
            .unwrap_or_else(|| panic!("button {key:?} not found in\n{text}"));
        let r = d
            .driver
            .act(ActParams {
                window: w.handle.clone(),
                handle: b.handle.clone(),
                op: Op::Click,
                value: None,
                settle: Some(Settle::default()),
            })
            .await
            .unwrap_or_else(|e| panic!("click {key}: {e}"));
        assert_eq!(r.status, ActStatus::Executed, "{key}: {r:?}");
        assert_eq!(r.channel, Channel::Action);
    }
    let display = d
        .wait_node(
            &w,
            |n| n.role == Role::Textbox && n.value.as_deref().map(str::trim) == Some("8"),
            Duration::from_secs(5),
        )
        .await;
    if display.is_none() {
        let mut now = String::new();
        dump(&d.snapshot(&w).await.root, 0, &mut now);
        panic!("the display should read 8 after 7 + 1 =:\n{now}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pointer_click_at_a_check_buttons_bounds_flips_it() {
    use deskpilot_protocol::types::{PointerAction, PointerParams};

    let d = desk().await;
    let (_pid, w) = d.launch(&["gtk3-widget-factory"], "", WAIT).await;
    let boxes = d.find(&w, "checkbutton", Some(Role::Checkbox)).await;
    let target = boxes
        .iter()
        .find(|n| usable(n) && n.bounds.is_some_and(|b| !b.is_empty()))
        .expect("an enabled check button with bounds")
        .clone();
    let b = target.bounds.unwrap();
    let was = target.has(State::Checked);
    let r = d
        .driver
        .pointer(PointerParams {
            window: w.handle.clone(),
            action: PointerAction::Click,
            x: b.x + b.width / 2,
            y: b.y + b.height / 2,
            to: None,
        })
        .await
        .expect("pointer click");
    assert_eq!(r.channel, Channel::Pointer);
    assert!(r.events_sent >= 2, "{r:?}");
    let flipped = d
        .wait_node(
            &w,
            |n| n.handle == target.handle && n.has(State::Checked) != was,
            Duration::from_secs(5),
        )
        .await;
    assert!(flipped.is_some(), "the click should flip the check button");
}
