//! Fuzzes the CLI's readers on arbitrary bytes: the JSON spec of every subcommand (through the
//! CLI's own `input.rs`, BOM handling and JSON-path errors included) and its CSV matrices.
//! A reader may refuse the input; it must not panic, and an error must be one line.
//!
//! The first byte picks the reader; the rest is the file.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use moe_planner::colocation::ColocationSpec;
use moe_planner::fitting::FitSpec;
use moe_planner::grouping::GroupSpec;
use moe_planner::inference::InferenceSpec;
use moe_planner::network::{FabricSpec, IterationSpec, SearchSpec};
use moe_planner::placement::PlacementSpec;
use moe_planner::schedule::ScheduleSpec;
use moe_planner::training::TrainingSpec;

/// The CLI's error type and readers, compiled into this target unchanged.
#[allow(dead_code)]
#[path = "../../crates/moe-planner-cli/src/error.rs"]
mod error;
#[allow(dead_code)]
#[path = "../../crates/moe-planner-cli/src/input.rs"]
mod input;

fn one_line<T>(result: Result<T, error::CliError>) {
    if let Err(e) = result {
        assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    // The CLI strips the byte-order mark when it reads a file; do the same.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let path = Path::new("fuzz.json");
    match which % 11 {
        0 => one_line(input::parse_json::<ScheduleSpec>(text, path)),
        1 => one_line(input::parse_json::<ColocationSpec>(text, path)),
        2 => one_line(input::parse_json::<InferenceSpec>(text, path)),
        3 => one_line(input::parse_json::<TrainingSpec>(text, path)),
        4 => one_line(input::parse_json::<FitSpec>(text, path)),
        5 => one_line(input::parse_json::<GroupSpec>(text, path)),
        6 => one_line(input::parse_json::<FabricSpec>(text, path)),
        7 => one_line(input::parse_json::<IterationSpec>(text, path)),
        8 => one_line(input::parse_json::<SearchSpec>(text, path)),
        9 => one_line(input::parse_json::<PlacementSpec>(text, path)),
        _ => one_line(input::parse_csv_rows(text, Path::new("fuzz.csv"))),
    }
});
