//! `formats::redis` against Redis itself: the committed fixtures (made by
//! `tests/fixtures/redis/make.py` with a real redis-server), and, where `redis-server` is
//! installed, a live round trip in both directions.
//!
//! The live test starts its own redis-server on 127.0.0.1 (a free port, no persistence) and
//! talks to it over a few lines of RESP (below) rather than a client crate, whose URL parsing
//! would bring some forty crates into the core crate's tests. Without redis-server it prints
//! that it skipped, loudly, and passes: the fixture tests still run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use synopses::core::Mergeable;
use synopses::formats::RedisHyperLogLog;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redis")
}

/// The elements of a fixture case, by the rule of `make.py`.
fn elements(kind: &str, n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| match kind {
            "ints" => i.to_string().into_bytes(),
            "strings" => format!("user-{i}").into_bytes(),
            "bytes" => i.to_le_bytes().to_vec(),
            other => panic!("unknown kind {other}"),
        })
        .collect()
}

fn built(kind: &str, n: u64) -> RedisHyperLogLog {
    let mut hll = RedisHyperLogLog::new();
    elements(kind, n).iter().for_each(|e| {
        hll.observe(e);
    });
    hll
}

struct Case {
    name: String,
    kind: String,
    n: u64,
    encoding: String,
    pfcount: u64,
}

fn manifest() -> (Vec<Case>, serde_json::Value) {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).expect("the manifest");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let cases = json["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().expect("name").into(),
            kind: c["kind"].as_str().expect("kind").into(),
            n: c["n"].as_u64().expect("n"),
            encoding: c["encoding"].as_str().expect("encoding").into(),
            pfcount: c["pfcount"].as_u64().expect("pfcount"),
        })
        .collect();
    (cases, json["merge"].clone())
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("{name}.hll"))).expect("the fixture")
}

#[test]
fn redis_strings_read_as_the_sketch_of_their_elements_and_count_as_pfcount() {
    let (cases, _) = manifest();
    assert_eq!(cases.len(), 21);
    for case in &cases {
        let stored = fixture(&case.name);
        let read = RedisHyperLogLog::from_bytes(&stored).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let here = built(&case.kind, case.n);
        assert_eq!(read, here, "{}: the registers of the same elements", case.name);
        assert_eq!(read.count(), case.pfcount, "{}: PFCOUNT", case.name);
        // The string written here is Redis's, but for the cached count (stale in both).
        assert_eq!(here.to_bytes(), stored, "{}: the {} string", case.name, case.encoding);
    }
}

#[test]
fn a_pfmerge_is_the_merge_here() {
    let (_, merge) = manifest();
    let parts: Vec<&str> = merge["of"].as_array().expect("parts").iter().map(|p| p.as_str().expect("name")).collect();
    let mut merged = RedisHyperLogLog::from_bytes(&fixture(parts[0])).expect("a fixture");
    for part in &parts[1..] {
        merged.merge(&RedisHyperLogLog::from_bytes(&fixture(part)).expect("a fixture")).expect("merges");
    }
    let stored = fixture("merged");
    assert_eq!(RedisHyperLogLog::from_bytes(&stored).expect("the merged fixture"), merged);
    assert_eq!(merged.count(), merge["pfcount"].as_u64().expect("pfcount"));
}

/// A redis-server of our own on 127.0.0.1, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts redis-server, or says why it could not.
fn start() -> Result<(Server, Redis), String> {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("redis-server did not start ({e})"))?;
    let server = Server { child, port };
    for _ in 0..100 {
        if let Ok(stream) = TcpStream::connect(("127.0.0.1", server.port)) {
            stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
            return Ok((
                server,
                Redis { reader: BufReader::new(stream.try_clone().map_err(|e| e.to_string())?), stream },
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("redis-server did not accept connections".into())
}

/// RESP2, as much as the test needs: commands of byte strings; replies of status, error,
/// integer and bulk string.
struct Redis {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

#[derive(Debug, PartialEq)]
enum Reply {
    Status(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
}

impl Redis {
    fn command(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out).map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.reader.read_line(&mut line).map_err(|e| e.to_string())?;
        let (kind, rest) = line.trim_end().split_at(1);
        match kind {
            "+" => Ok(Reply::Status(rest.into())),
            "-" => Err(rest.into()),
            ":" => rest.parse().map(Reply::Integer).map_err(|e| e.to_string()),
            "$" => {
                let n: i64 = rest.parse().map_err(|e: std::num::ParseIntError| e.to_string())?;
                let Ok(n) = usize::try_from(n) else { return Ok(Reply::Bulk(None)) };
                let mut data = vec![0; n + 2];
                self.reader.read_exact(&mut data).map_err(|e| e.to_string())?;
                data.truncate(n);
                Ok(Reply::Bulk(Some(data)))
            }
            _ => Err(format!("unexpected reply {line:?}")),
        }
    }

    fn count(&mut self, keys: &[&str]) -> u64 {
        let mut args: Vec<&[u8]> = vec![b"PFCOUNT"];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        match self.command(&args) {
            Ok(Reply::Integer(n)) => u64::try_from(n).expect("a count"),
            other => panic!("PFCOUNT {keys:?}: {other:?}"),
        }
    }

    fn get(&mut self, key: &str) -> Vec<u8> {
        match self.command(&[b"GET", key.as_bytes()]) {
            Ok(Reply::Bulk(Some(bytes))) => bytes,
            other => panic!("GET {key}: {other:?}"),
        }
    }

    fn set(&mut self, key: &str, value: &[u8]) {
        assert_eq!(self.command(&[b"SET", key.as_bytes(), value]), Ok(Reply::Status("OK".into())));
    }

    fn add(&mut self, key: &str, elements: &[Vec<u8>]) {
        for chunk in elements.chunks(1000) {
            let mut args: Vec<&[u8]> = vec![b"PFADD", key.as_bytes()];
            args.extend(chunk.iter().map(Vec::as_slice));
            self.command(&args).unwrap_or_else(|e| panic!("PFADD: {e}"));
        }
    }
}

#[test]
fn live_redis_reads_what_we_write_and_we_read_what_it_writes() {
    let (mut redis, _server) = match start() {
        Ok((server, redis)) => (redis, server),
        Err(why) => {
            // Straight to the process's stderr: the test harness captures `eprintln!` of a
            // passing test, and this must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED the live Redis cross-check: {why}. Install redis-server (Debian: \
                 apt-get install redis-server) to run it; the fixture tests ran. ***\n"
            );
            return;
        }
    };
    let (cases, _) = manifest();
    for case in &cases {
        // Redis's own sketch of the elements: the committed fixture again, byte for byte.
        redis.add(&case.name, &elements(&case.kind, case.n));
        assert_eq!(redis.get(&case.name), fixture(&case.name), "{}: Redis made another string", case.name);

        // Ours, SET into Redis: the same count, and Redis keeps updating it as its own.
        let ours = built(&case.kind, case.n);
        let key = format!("ours_{}", case.name);
        redis.set(&key, &ours.to_bytes());
        assert_eq!(redis.count(&[&key]), ours.count(), "{key}: PFCOUNT of our string");
        let more = elements("strings", 500);
        redis.add(&key, &more);
        let mut expected = ours.clone();
        more.iter().for_each(|e| {
            expected.observe(e);
        });
        let back = RedisHyperLogLog::from_bytes(&redis.get(&key)).expect("Redis's string");
        assert_eq!(back, expected, "{key}: PFADD on our string, read back");
        assert_eq!(redis.count(&[&key]), expected.count());

        // A union over our string and Redis's: PFCOUNT of both keys, and PFMERGE.
        let mut union = built(&case.kind, case.n);
        union.merge(&expected).expect("merges");
        assert_eq!(redis.count(&[&case.name, &key]), union.count(), "{key}: PFCOUNT of two keys");
        let merged_key = format!("merged_{}", case.name);
        let reply = redis.command(&[b"PFMERGE", merged_key.as_bytes(), case.name.as_bytes(), key.as_bytes()]);
        assert_eq!(reply, Ok(Reply::Status("OK".into())));
        assert_eq!(RedisHyperLogLog::from_bytes(&redis.get(&merged_key)).expect("PFMERGE's string"), union);
    }
    // A damaged string is refused by Redis and by us alike.
    let mut damaged = built("ints", 100).to_bytes();
    damaged.pop();
    redis.set("damaged", &damaged);
    assert!(redis.command(&[b"PFCOUNT", b"damaged"]).is_err());
    assert!(RedisHyperLogLog::from_bytes(&damaged).is_err());
}

/// The count's error, over 64 sets of 200 000 distinct elements (12 per register, where the
/// error is HyperLogLog's asymptotic `σ = 1.04/√16 384 = 0.81 %`): the mean relative error
/// within 4 standard errors of 0 (`4σ/√64`), and its root mean square within 4 standard
/// deviations of σ (the mean of 64 squared normal errors has relative deviation `√(2/64)`, so
/// the RMS about half that).
#[test]
fn the_count_is_within_its_stated_error() {
    let (trials, n) = (64_u32, 200_000_u32);
    let sigma = 1.04 / (16_384_f64).sqrt();
    let errors: Vec<f64> = (0..trials)
        .map(|t| {
            let mut hll = RedisHyperLogLog::new();
            (0..n).for_each(|i| {
                hll.observe(format!("set{t}-{i}"));
            });
            hll.count() as f64 / f64::from(n) - 1.0
        })
        .collect();
    let mean = errors.iter().sum::<f64>() / f64::from(trials);
    let rms = (errors.iter().map(|e| e * e).sum::<f64>() / f64::from(trials)).sqrt();
    let spread = 4.0 * (0.5_f64 / f64::from(trials)).sqrt();
    assert!(mean.abs() < 4.0 * sigma / f64::from(trials).sqrt(), "mean error {mean}");
    assert!((rms / sigma - 1.0).abs() < spread, "RMS {rms} against σ = {sigma} (±{spread} relative)");
}

mod laws {
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::Index;

    fn observed(items: &[u64]) -> RedisHyperLogLog {
        let mut hll = RedisHyperLogLog::new();
        items.iter().for_each(|i| {
            hll.observe(i.to_le_bytes());
        });
        hll
    }

    fn merged(a: &RedisHyperLogLog, b: &RedisHyperLogLog) -> RedisHyperLogLog {
        let mut out = a.clone();
        out.merge(b).expect("every Redis HyperLogLog merges");
        out
    }

    /// Items from a small range (repeats) or anywhere.
    fn items() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(prop_oneof![0_u64..50, any::<u64>()], 0..300)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// A stream cut anywhere into parts, the parts merged: the sketch of the whole stream,
        /// the same string and the same count.
        #[test]
        fn parts_merge_into_the_whole(items in items(), cuts in prop::collection::vec(any::<Index>(), 0..4)) {
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(items.len() + 1)).collect();
            at.sort_unstable();
            let mut union = RedisHyperLogLog::new().empty_like();
            let mut start = 0;
            for cut in at.into_iter().chain([items.len()]) {
                union.merge(&observed(&items[start..cut])).unwrap();
                start = cut;
            }
            let whole = observed(&items);
            prop_assert_eq!(&union, &whole);
            prop_assert_eq!(union.to_bytes(), whole.to_bytes());
            prop_assert_eq!(union.count(), whole.count());
        }

        /// Commutative, associative, idempotent, with the empty sketch as identity.
        #[test]
        fn merge_is_a_semilattice(a in items(), b in items(), c in items()) {
            let (a, b, c) = (observed(&a), observed(&b), observed(&c));
            prop_assert_eq!(merged(&a, &b), merged(&b, &a));
            prop_assert_eq!(merged(&merged(&a, &b), &c), merged(&a, &merged(&b, &c)));
            let empty = RedisHyperLogLog::new();
            prop_assert_eq!(&merged(&a, &empty), &a);
            prop_assert_eq!(&merged(&empty, &a), &a);
            prop_assert_eq!(&merged(&a, &a), &a);
        }
    }
}

#[test]
fn the_crates_hyperloglog_holds_redis_registers_both_ways() {
    use synopses::cardinality::HyperLogLog;
    use synopses::formats::redis::{HYPERLOGLOG_SEED, hyperloglog_hash};

    let (cases, _) = manifest();
    for case in &cases {
        let stored = RedisHyperLogLog::from_bytes(&fixture(&case.name)).expect("a fixture");
        // Fed Redis's hashes, rotated: Redis's registers, sparse or dense.
        let mut fed = HyperLogLog::with_seed(14, HYPERLOGLOG_SEED).expect("precision 14");
        elements(&case.kind, case.n).iter().for_each(|e| fed.observe_hash(hyperloglog_hash(e)));
        assert_eq!(RedisHyperLogLog::from_hyperloglog(&fed).expect("Redis's registers"), stored, "{}", case.name);
        // And back: the converted sketch converts to the same Redis sketch. Its estimate is
        // Ertl's estimator on the same registers, as PFCOUNT's is, but with α_m = α_∞ / (1 +
        // 1.079/m) where Redis takes α_∞ (6.6·10⁻⁵ lower, relative), and unrounded where Redis
        // rounds to an integer (±0.5): 10⁻⁴ of the count plus 0.5 holds both.
        let converted = stored.to_hyperloglog().expect("registers of at most 51");
        assert_eq!(RedisHyperLogLog::from_hyperloglog(&converted).expect("converts back"), stored);
        let (estimate, count) = (converted.estimate(), stored.count() as f64);
        assert!((estimate - count).abs() <= 0.5 + 1e-4 * count, "{}: {estimate} against PFCOUNT {count}", case.name);
        // Never merged with a sketch of the crate's own hash.
        let mut own = HyperLogLog::new(14).expect("precision 14");
        own.observe(case.n);
        assert_eq!(own.merge(&converted).map_err(|e| e.parameter()), Err("seed"));
    }
    // Another precision or seed does not convert; a crafted register above 51 does not either.
    let wrong_p = HyperLogLog::with_seed(12, HYPERLOGLOG_SEED).expect("precision 12");
    assert_eq!(RedisHyperLogLog::from_hyperloglog(&wrong_p).map_err(|e| e.parameter()), Err("precision"));
    let mut crafted = RedisHyperLogLog::new().to_dense_bytes();
    crafted[16] = 60;
    let crafted = RedisHyperLogLog::from_bytes(&crafted).expect("Redis accepts it too");
    assert_eq!(crafted.to_hyperloglog().map_err(|e| e.parameter()), Err("register"));
}
