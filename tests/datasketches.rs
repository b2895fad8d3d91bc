//! `formats::datasketches` against DataSketches itself, live: where Python has the
//! `datasketches` package (the interpreter in `SYNOPSES_DATASKETCHES_PYTHON`, else `python3`),
//! the test regenerates the committed fixtures and compares them byte for byte, then has
//! DataSketches read images written here and compares its answers and the images it writes
//! back, and its unions of them with ours.
//!
//! The committed fixtures are checked without Python by the unit tests of
//! `formats::datasketches`. Without the package this test says loudly that it skipped, and
//! passes. `.ci/run` installs the package in a virtual environment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use synopses::core::Mergeable;
use synopses::formats::{DataSketchesHll, HllType};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/datasketches")
}

/// A Python that imports `datasketches`, or why there is none.
fn python() -> Result<String, String> {
    let python = std::env::var("SYNOPSES_DATASKETCHES_PYTHON").unwrap_or_else(|_| "python3".into());
    match Command::new(&python).args(["-c", "import datasketches"]).output() {
        Ok(out) if out.status.success() => Ok(python),
        Ok(_) => Err(format!("{python} has no `datasketches` package")),
        Err(e) => Err(format!("{python} did not run ({e})")),
    }
}

/// A scratch directory of this test, emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("synopses-datasketches-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn run(python: &str, args: &[&Path]) -> Vec<u8> {
    let out = Command::new(python).args(args).output().expect("python runs");
    assert!(out.status.success(), "{:?} failed: {}", args, String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// An image with its coupons sorted: a list's or a set's, or HLL_4's exceptions (their order
/// follows the table they came from, which a reader may build in another order).
fn canonical(image: &[u8]) -> Vec<u8> {
    let start = match (image[0], image[7] >> 2 & 3) {
        (2, _) => 8,
        (3, _) => 12,
        (10, 0) => 40 + (1 << image[3]) / 2,
        _ => return image.to_vec(),
    };
    let mut coupons: Vec<&[u8]> = image[start..].chunks(4).collect();
    coupons.sort_unstable();
    let mut out = image[..start].to_vec();
    coupons.into_iter().for_each(|c| out.extend_from_slice(c));
    out
}

fn hex(text: &serde_json::Value) -> Vec<u8> {
    let text = text.as_str().expect("hex");
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
}

/// DataSketches' answers for a sketch are ours, to the bit.
fn assert_same_answers(name: &str, ours: &DataSketchesHll, theirs: &serde_json::Value) {
    assert_eq!(ours.estimate(), theirs["estimate"].as_f64().expect("estimate"), "{name}: estimate");
    for sd in 1..=3_u8 {
        let at = usize::from(sd - 1);
        assert_eq!(
            ours.lower_bound(sd).expect("sd"),
            theirs["lower"][at].as_f64().expect("lower"),
            "{name}: lower {sd}"
        );
        assert_eq!(
            ours.upper_bound(sd).expect("sd"),
            theirs["upper"][at].as_f64().expect("upper"),
            "{name}: upper {sd}"
        );
    }
}

/// Sketches of every mode and type, of integers, strings and floats, and merges of them.
fn our_sketches() -> BTreeMap<String, DataSketchesHll> {
    let mut out = BTreeMap::new();
    for lg_k in [4_u8, 9, 11, 16] {
        for (t, target) in [("4", HllType::Hll4), ("6", HllType::Hll6), ("8", HllType::Hll8)] {
            for n in [0_u64, 5, 150, 3_000, 60_000] {
                let mut ints = DataSketchesHll::new(lg_k, target).expect("lg_k");
                let mut strings = DataSketchesHll::new(lg_k, target).expect("lg_k");
                for i in 0..n {
                    ints.update(i as i64 * 7 - 1_000);
                    strings.update(format!("item {i}"));
                }
                out.insert(format!("ints_k{lg_k}_{t}_{n}"), ints);
                out.insert(format!("strings_k{lg_k}_{t}_{n}"), strings);
            }
        }
    }
    let mut merged = out["ints_k16_4_60000"].clone();
    merged.merge(&out["strings_k11_8_3000"]).expect("merge");
    out.insert("merged_a".into(), merged);
    let mut merged = out["strings_k9_6_150"].clone();
    merged.merge(&out["ints_k16_8_60000"]).expect("merge");
    out.insert("merged_b".into(), merged);
    // The ends of lg_k: 7 (a list turns into registers), 21 (a set of up to 196 608 coupons).
    for (lg_k, n, target) in
        [(7_u8, 1_000_i64, HllType::Hll6), (21, 150_000, HllType::Hll8), (21, 400_000, HllType::Hll4)]
    {
        let mut sketch = DataSketchesHll::new(lg_k, target).expect("lg_k");
        (0..n).for_each(|i| sketch.update(i));
        out.insert(format!("ends_k{lg_k}_{n}"), sketch);
    }
    let mut floats = DataSketchesHll::new(12, HllType::Hll4).expect("lg_k");
    (0..40_000).for_each(|i| floats.update(f64::from(i) / 3.0));
    floats.update(f64::NAN);
    floats.update(-0.0_f64);
    out.insert("floats".into(), floats);
    out
}

#[test]
fn live_datasketches_makes_our_fixtures_and_reads_what_we_write() {
    let python = match python() {
        Ok(python) => python,
        Err(why) => {
            eprintln!(
                "\n*** SKIPPED the live DataSketches cross-check: {why}. Install it \
                 (python3 -m venv venv && venv/bin/pip install datasketches) and set \
                 SYNOPSES_DATASKETCHES_PYTHON=venv/bin/python; the fixture tests still ran. ***\n"
            );
            return;
        }
    };

    // 1. The fixtures, made again by DataSketches, are the committed ones.
    let made = scratch("fixtures");
    run(&python, &[&fixtures().join("make.py"), &made]);
    let mut compared = 0;
    for entry in std::fs::read_dir(fixtures()).expect("the fixtures") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "bin") {
            let again = std::fs::read(made.join(path.file_name().expect("a name"))).expect("made again");
            assert_eq!(again, std::fs::read(&path).expect("committed"), "{}", path.display());
            compared += 1;
        }
    }
    assert_eq!(compared, 2 * 113);
    let manifest = |dir: &Path| -> serde_json::Value {
        let mut m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).expect("JSON");
        m["datasketches_version"] = serde_json::Value::Null;
        m
    };
    assert_eq!(manifest(&made), manifest(&fixtures()), "the answers in the manifest");

    // 2. DataSketches reads our images, answers as we do, and writes them back as we do.
    let ours = our_sketches();
    let dir = scratch("ours");
    for (name, sketch) in &ours {
        std::fs::write(dir.join(format!("{name}.c.bin")), sketch.to_bytes()).expect("write");
        std::fs::write(dir.join(format!("{name}.u.bin")), sketch.to_updatable_bytes()).expect("write");
    }
    let pairs = [
        ("u0", 16, "ints_k16_4_60000", "strings_k11_6_60000"),
        ("u1", 16, "ints_k9_8_150", "strings_k16_4_3000"),
        ("u2", 11, "strings_k11_4_5", "ints_k11_6_150"),
        ("u3", 9, "ints_k9_6_3000", "ints_k9_8_60000"),
        ("u4", 16, "strings_k16_8_150", "ints_k4_4_60000"),
    ];
    let unions: String = pairs.iter().map(|(n, k, a, b)| format!("{n} {k} {a}.c {b}.u\n")).collect();
    std::fs::write(dir.join("unions.txt"), unions).expect("write");
    let report: serde_json::Value =
        serde_json::from_slice(&run(&python, &[&fixtures().join("check.py"), &dir])).expect("JSON");
    for (name, sketch) in &ours {
        for (form, ours_bytes) in [("c", sketch.to_bytes()), ("u", sketch.to_updatable_bytes())] {
            let theirs = &report["images"][format!("{name}.{form}")];
            assert_same_answers(name, sketch, theirs);
            // What DataSketches writes back reads here as the same sketch.
            for back in [hex(&theirs["compact"]), hex(&theirs["updatable"])] {
                let read = DataSketchesHll::from_bytes(&back).expect("DataSketches' image");
                assert_eq!(canonical(&read.to_bytes()), canonical(&sketch.to_bytes()), "{name}.{form}");
            }
            if form == "u" {
                assert_eq!(hex(&theirs["updatable"]), ours_bytes, "{name}: the updatable image, written back");
            } else {
                assert_eq!(
                    canonical(&hex(&theirs["compact"])),
                    canonical(&ours_bytes),
                    "{name}: the compact image, written back"
                );
            }
        }
    }
    for (name, lg_max_k, a, b) in pairs {
        let union = DataSketchesHll::union(lg_max_k, [&ours[a], &ours[b]], HllType::Hll8).expect("lg_max_k");
        let theirs = &report["unions"][name];
        assert_same_answers(name, &union, theirs);
        assert_eq!(canonical(&hex(&theirs["compact"])), canonical(&union.to_bytes()), "{name}: the union's image");
    }
    let _ = std::fs::remove_dir_all(made);
    let _ = std::fs::remove_dir_all(dir);
}
