//! Real-application test: LibreOffice Calc, whose sheet grid reports 2³¹−1 children
//! and must only ever be read by visible range.

#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::time::{Duration, Instant};

use common::{desk, dump};
use deskpilot_core::{Op, Role, State};
use deskpilot_driver_linux::atspi::{MAX_COLUMNS, MAX_ROWS};
use deskpilot_protocol::Driver;
use deskpilot_protocol::types::{ActParams, ActStatus, Channel, Settle};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calc_sheet_reads_by_visible_range_and_a_cell_takes_a_number() {
    let d = desk().await;
    // First start in a fresh profile takes several seconds.
    let (_pid, w) = d
        .launch(
            &["soffice", "--calc", "--norestore", "--nologo"],
            "LibreOffice Calc",
            Duration::from_secs(90),
        )
        .await;

    // The frame appears before the document inside it is built: wait for the grid.
    let grid = d
        .wait_node(
            &w,
            |n| n.role == Role::Table && n.table.is_some(),
            Duration::from_secs(60),
        )
        .await;
    assert!(grid.is_some(), "the sheet grid never appeared");

    let started = Instant::now();
    let snap = d.snapshot(&w).await;
    let elapsed = started.elapsed();
    eprintln!(
        "LibreOffice Calc snapshot: {elapsed:?}, stats {:?}",
        snap.stats
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "snapshot took {elapsed:?}"
    );
    assert!(snap.stats.bulk, "{:?}", snap.stats);

    let sheet = snap
        .root
        .walk()
        .find(|n| n.role == Role::Table && n.table.is_some())
        .unwrap_or_else(|| {
            let mut t = String::new();
            dump(&snap.root, 0, &mut t);
            panic!("no table with table info in\n{t}")
        });
    let info = sheet.table.unwrap();
    assert_eq!(info.rows, 1_048_576);
    assert_eq!(info.columns, 16_384);
    assert!(info.a1, "LibreOffice names cells in A1 notation");
    assert_eq!(info.visible_rows.map(|r| r.0), Some(0));
    assert_eq!(info.visible_columns.map(|c| c.0), Some(0));
    assert!(sheet.has(State::ManagesDescendants));
    // Every visible cell up to the read's block: on 1280×800, A1:O33.
    let (rows, cols) = (info.visible_rows.unwrap(), info.visible_columns.unwrap());
    let visible = (rows.1 - rows.0 + 1) * (cols.1 - cols.0 + 1);
    assert!(
        sheet.children.len() as u64 == visible.min(MAX_ROWS * MAX_COLUMNS)
            && sheet.children.len() >= 20,
        "visible cells only: {} of {visible} visible",
        sheet.children.len()
    );
    assert!(cols.1 >= 13, "columns A to N are on screen: {info:?}");
    assert_eq!(info.read, None, "every visible cell was read: {info:?}");
    assert_eq!(sheet.child_count, 1_048_576 * 16_384);
    let b2 = sheet
        .children
        .iter()
        .find(|c| c.name == "B2")
        .expect("cell B2 is visible")
        .clone();
    assert_eq!(b2.role, Role::Cell);

    let r = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: b2.handle.clone(),
            op: Op::SetValue,
            value: Some("42".into()),
            settle: Some(Settle::default()),
        })
        .await
        .expect("set B2");
    assert_eq!(r.status, ActStatus::Executed, "{r:?}");
    assert_eq!(
        r.channel,
        Channel::Value,
        "cells have Value but no EditableText: {r:?}"
    );

    let again = d.snapshot(&w).await;
    let b2_now = again
        .root
        .walk()
        .find(|n| n.role == Role::Cell && n.name == "B2")
        .expect("B2 still visible");
    assert_eq!(b2_now.value.as_deref(), Some("42"));
    assert!(again.stats.elapsed_ms < 5_000, "{:?}", again.stats);

    // Text into a cell: no EditableText, so the keyboard fallback types it into the
    // focused window after moving focus to the cell; Return commits it.
    let c3 = again
        .root
        .walk()
        .find(|n| n.role == Role::Cell && n.name == "C3")
        .expect("C3 visible")
        .handle
        .clone();
    let typed = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: c3,
            op: Op::Type,
            value: Some("hello".into()),
            settle: Some(Settle::default()),
        })
        .await
        .expect("type into C3");
    assert_eq!(typed.status, ActStatus::Executed, "{typed:?}");
    assert_eq!(typed.channel, Channel::Keyboard, "{typed:?}");
    assert!(
        typed
            .note
            .as_deref()
            .is_some_and(|n| n.contains("keyboard")),
        "{typed:?}"
    );
    d.driver
        .keys(deskpilot_protocol::types::KeysParams {
            window: w.handle.clone(),
            chord: Some("Return".into()),
            text: None,
        })
        .await
        .expect("Return");
    let c3_now = d
        .wait_node(
            &w,
            |n| n.role == Role::Cell && n.name == "C3" && n.value.as_deref() == Some("hello"),
            Duration::from_secs(5),
        )
        .await;
    assert!(c3_now.is_some(), "C3 should read hello after Return");
}
