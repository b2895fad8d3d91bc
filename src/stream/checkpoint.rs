//! Checkpoints: an operator's whole state written to a directory at a consistent point, and
//! restored after a failure, so that the restored run finishes with the answer of a run that
//! never failed.
//!
//! # Snapshots and state backends
//!
//! A stream operator that fails loses its state, and replaying the whole stream to rebuild it
//! is what the state was there to avoid. So the operator's state is *snapshotted*
//! periodically to durable storage (the *state backend*, here a directory); after a crash the
//! last snapshot is restored and the input is replayed from the position the snapshot
//! recorded. Restore-and-continue then equals the uninterrupted run when two conditions hold:
//!
//! * **The cut is consistent.** Every part of the state reflects the same prefix of the
//!   input: a partitioned operator's parts are captured between the same items (between two
//!   batches on rayon, at a completed timestamp in timely dataflow, where progress tracking
//!   guarantees that every worker has seen everything up to the time and nothing after it). A
//!   snapshot that caught one part before an item and another after it would count the item
//!   twice or never after the replay.
//! * **The state is whole.** Everything the operator's future depends on is in it: every
//!   part, every pane of a window, positions and watermarks, a partitioner's loads (which
//!   decide where partial key grouping sends the next item) and a sampler's random stream (the
//!   same seeds then draw the same sample). Every synopsis of this crate encodes all of that
//!   ([`Codec`]), so a restored synopsis is bit for bit the one that was saved.
//!
//! # On disk
//!
//! [`Checkpoints`] keeps each checkpoint in a directory of its own, `epoch-<epoch>`, holding
//! one file per part of the state (`part-<i>`) and a `MANIFEST` that lists the parts with
//! their lengths and checksums. A checkpoint is written into a temporary directory, every file
//! flushed to the device, and then renamed into place in one atomic step: a crash while saving
//! leaves a temporary directory (removed the next time the store opens), never a half-written
//! checkpoint under a final name, and the previous checkpoint untouched. Saving an epoch that
//! already has a checkpoint sets the old one aside first and deletes it only once its
//! replacement is in place (a crash in between puts it back when the store next opens). Restoring takes the
//! newest checkpoint whose manifest and parts all check out; a damaged one (a truncated or
//! corrupted file, a missing part) is skipped, reported in [`Restored::skipped`], and the one
//! before it is used. The newest [`keep`](Checkpoints::keep) checkpoints are kept (2 unless
//! set), so that one damaged checkpoint never leaves nothing to restore.
//!
//! # Cost
//!
//! A checkpoint writes the encoded state: for a partitioned sketch, the parts'
//! [`encoded_len`](Codec::encoded_len) summed (a HyperLogLog of `p = 14` on 4 workers is
//! 4 × 16 KiB), plus a manifest of 16 bytes a part; for a window, every pane. Writing it takes
//! the time to encode and to flush that many bytes, so the interval between checkpoints trades
//! the cost of taking them against the input to replay after a failure.
//!
//! # When not to use it
//!
//! * The input cannot be replayed from a position (a socket without a durable log in front of
//!   it): a restored state then misses whatever arrived after the checkpoint.
//! * Several processes each hold a part: this store is one writer's (one process's) state.
//!   Let each process save its own parts to its own directory at the same completed time, or
//!   gather the parts in one process, as `examples/timely.rs` does.
//!
//! # References
//!
//! * K. M. Chandy, L. Lamport. *Distributed snapshots: determining global states of
//!   distributed systems.* ACM TOCS 3(1), 1985.
//! * P. Carbone, G. Fóra, S. Ewen, S. Haridi, K. Tzoumas. *Lightweight asynchronous snapshots
//!   for distributed dataflows.* arXiv:1506.08603, 2015.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::codec::Codec;
use crate::core::{ConfigError, DecodeError, Mergeable};
use crate::hash::hash_bytes;

/// State that can be saved as a list of byte parts and restored from them: what
/// [`Checkpoints`] stores, one file per part.
///
/// Every synopsis of the crate is one part (its [`Codec`] encoding), and so is any other
/// [`Codec`] type (a window, a partitioner); a [`Partitioned`](super::Partitioned) operator is
/// its partitioner and one part per worker.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::Snapshot;
///
/// let mut hll = HyperLogLog::new(12)?;
/// hll.observe_all(0..1000_u64);
/// let parts = hll.snapshot();
/// assert_eq!(parts.len(), 1);
/// assert_eq!(HyperLogLog::restore(&parts)?, hll);
/// # Ok::<(), synopses::Error>(())
/// ```
pub trait Snapshot: Sized {
    /// The state, as parts.
    fn snapshot(&self) -> Vec<Vec<u8>>;

    /// The state the parts of a [`snapshot`](Self::snapshot) hold, validated as every decoder
    /// of the crate validates its bytes.
    fn restore(parts: &[Vec<u8>]) -> Result<Self, DecodeError>;
}

impl<S: Codec> Snapshot for S {
    fn snapshot(&self) -> Vec<Vec<u8>> {
        vec![self.to_bytes()]
    }

    fn restore(parts: &[Vec<u8>]) -> Result<Self, DecodeError> {
        match parts {
            [one] => S::from_bytes(one),
            _ => Err(DecodeError::InvalidField { field: "parts", reason: "a single synopsis is one part" }),
        }
    }
}

/// A partitioned operator is its partitioner (its configuration, seed and loads, which decide
/// where partial key grouping sends the next item) and then one part per worker; restoring
/// checks one part per worker, of one configuration.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{PartialKeyGrouping, Partitioned, Snapshot};
///
/// let mut parts = Partitioned::new(&HyperLogLog::new(10)?, PartialKeyGrouping::new(3)?)?;
/// (0..5000_u64).for_each(|i| parts.observe(i % 700));
/// let saved = parts.snapshot();
/// assert_eq!(saved.len(), 1 + 3);
/// let mut restored = Partitioned::<HyperLogLog, PartialKeyGrouping>::restore(&saved)?;
/// (5000..9000_u64).for_each(|i| {
///     parts.observe(i % 700);
///     restored.observe(i % 700);
/// });
/// assert_eq!(restored.parts(), parts.parts());
/// assert_eq!(restored.partitioner(), parts.partitioner());
/// # Ok::<(), synopses::Error>(())
/// ```
impl<O, P> Snapshot for super::Partitioned<O, P>
where
    O: Codec + Mergeable,
    P: super::Partitioner + Codec,
{
    fn snapshot(&self) -> Vec<Vec<u8>> {
        std::iter::once(self.partitioner().to_bytes()).chain(self.parts().iter().map(Codec::to_bytes)).collect()
    }

    fn restore(parts: &[Vec<u8>]) -> Result<Self, DecodeError> {
        let invalid = |reason| DecodeError::InvalidField { field: "parts", reason };
        let (partitioner, parts) = parts.split_first().ok_or(invalid("no partitioner"))?;
        let partitioner = P::from_bytes(partitioner)?;
        let parts = parts.iter().map(|bytes| O::from_bytes(bytes)).collect::<Result<Vec<O>, _>>()?;
        // Parts of one configuration: their empty instances merge.
        if let Some((first, rest)) = parts.split_first() {
            let mut probe = first.empty_like();
            if rest.iter().any(|part| probe.merge(&part.empty_like()).is_err()) {
                return Err(invalid("parts of different configurations"));
            }
        }
        super::Partitioned::from_parts(parts, partitioner).map_err(|_| invalid("not one part per worker"))
    }
}

/// A checkpoint that was restored: its epoch, the state, and the newer checkpoints that were
/// skipped because they were damaged.
#[derive(Debug)]
#[non_exhaustive]
pub struct Restored<S> {
    /// The epoch the checkpoint was saved under.
    pub epoch: u64,
    /// The restored state.
    pub state: S,
    /// Newer checkpoints that could not be restored, newest first, with what was wrong.
    pub skipped: Vec<(u64, CheckpointError)>,
}

/// What went wrong saving or restoring a checkpoint.
///
/// ```
/// use synopses::stream::{CheckpointError, Checkpoints};
///
/// let file = std::env::temp_dir().join(format!("synopses-not-a-dir-{}", std::process::id()));
/// std::fs::write(&file, b"a file where a directory should be")?;
/// let opened = Checkpoints::open(&file);
/// assert!(matches!(opened, Err(CheckpointError::Io { .. })));
/// std::fs::remove_file(&file)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Reading or writing a file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error of the operating system.
        source: io::Error,
    },
    /// A checkpoint's manifest or one of its parts does not check out.
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: DecodeError,
    },
}

impl CheckpointError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::Io { path: path.to_path_buf(), source }
    }

    fn damaged(path: &Path, reason: DecodeError) -> Self {
        Self::Damaged { path: path.to_path_buf(), reason }
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "checkpoint I/O on {}: {source}", path.display()),
            Self::Damaged { path, reason } => write!(f, "damaged checkpoint file {}: {reason}", path.display()),
        }
    }
}

impl std::error::Error for CheckpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Damaged { reason, .. } => Some(reason),
        }
    }
}

/// A directory of checkpoints: [`save`](Self::save) writes one atomically, and
/// [`latest`](Self::latest) restores the newest that is intact.
///
/// One writer at a time: [`open`](Self::open) clears what crashed saves left, so a directory
/// is opened by its writer, and by readers only while no save runs (as every process of a
/// timely computation does at startup, before any epoch can complete).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::Checkpoints;
///
/// let dir = std::env::temp_dir().join(format!("synopses-doc-checkpoints-{}", std::process::id()));
/// let store = Checkpoints::open(&dir)?;
/// let mut hll = HyperLogLog::new(12)?;
/// for epoch in 1..=3_u64 {
///     hll.observe_all((epoch - 1) * 1000..epoch * 1000);
///     store.save(epoch, &hll)?;
/// }
/// // After a crash: the newest checkpoint, and the input from epoch 3 on to replay.
/// let restored = store.latest::<HyperLogLog>()?.ok_or("no checkpoint")?;
/// assert_eq!((restored.epoch, restored.state), (3, hll));
/// assert_eq!(store.epochs()?, [2, 3]); // the newest two are kept
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Checkpoints {
    dir: PathBuf,
    keep: usize,
}

/// The manifest's magic bytes and format version.
const MANIFEST_MAGIC: [u8; 4] = *b"SYCP";
const MANIFEST_VERSION: u8 = 1;
const MANIFEST: &str = "MANIFEST";
/// Magic, version, epoch, part count: the manifest before its part entries.
const MANIFEST_HEAD: usize = 4 + 1 + 8 + 4;
/// A part's length and checksum.
const MANIFEST_ENTRY: usize = 16;
const CHECKSUM_SEED: u64 = 0x5359_4350;
const EPOCH_PREFIX: &str = "epoch-";
const TEMP_PREFIX: &str = ".saving-";
const REPLACED_PREFIX: &str = ".replaced-";

impl Checkpoints {
    /// The checkpoints in `dir`, created if it does not exist. Temporary directories left by a
    /// save that crashed are removed.
    ///
    /// ```
    /// use synopses::stream::Checkpoints;
    ///
    /// let dir = std::env::temp_dir().join(format!("synopses-doc-open-{}", std::process::id()));
    /// let store = Checkpoints::open(&dir)?;
    /// assert!(store.epochs()?.is_empty());
    /// assert_eq!(store.dir(), dir.as_path());
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, CheckpointError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(CheckpointError::io(&dir))?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
        for entry in fs::read_dir(&dir).map_err(CheckpointError::io(&dir))? {
            let entry = entry.map_err(CheckpointError::io(&dir))?;
            let (name, path) = (entry.file_name(), entry.path());
            let name = name.to_string_lossy();
            if name.starts_with(TEMP_PREFIX) {
                fs::remove_dir_all(&path).map_err(CheckpointError::io(&path))?;
            } else if let Some(epoch) = name.strip_prefix(REPLACED_PREFIX) {
                // A save that crashed while replacing a checkpoint: the replacement either
                // landed (drop the old one) or did not (put the old one back).
                let replaced = dir.join(format!("{EPOCH_PREFIX}{epoch}"));
                if replaced.exists() {
                    fs::remove_dir_all(&path).map_err(CheckpointError::io(&path))?;
                } else {
                    fs::rename(&path, &replaced).map_err(CheckpointError::io(&replaced))?;
                }
            }
        }
        sync_dir(&dir)?;
        Ok(Self { dir, keep: 2 })
    }

    /// Keeps the newest `keep` checkpoints (at least 1; 2 unless set), removing older ones
    /// after each save. With 2 or more, a damaged newest checkpoint still leaves one to
    /// restore.
    ///
    /// ```
    /// use synopses::stream::Checkpoints;
    ///
    /// let dir = std::env::temp_dir().join(format!("synopses-doc-keep-{}", std::process::id()));
    /// let store = Checkpoints::open(&dir)?.keep(3)?;
    /// assert!(Checkpoints::open(&dir)?.keep(0).is_err());
    /// for epoch in 0..5_u64 {
    ///     store.save(epoch, &synopses::membership::Bloom::new(64, 2)?)?;
    /// }
    /// assert_eq!(store.epochs()?, [2, 3, 4]);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keep(mut self, keep: usize) -> Result<Self, ConfigError> {
        if keep == 0 {
            return Err(ConfigError::new("keep", keep, "at least 1"));
        }
        self.keep = keep;
        Ok(self)
    }

    /// The directory.
    ///
    /// ```
    /// use synopses::stream::Checkpoints;
    ///
    /// let dir = std::env::temp_dir().join(format!("synopses-doc-dir-{}", std::process::id()));
    /// assert!(Checkpoints::open(&dir)?.dir().is_dir());
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Saves `state` as the checkpoint of `epoch` (the position to resume the input from, in
    /// the caller's terms: a batch number, a timestamp, an offset), atomically: the checkpoint
    /// appears whole or not at all. A checkpoint already saved under `epoch` is replaced, and
    /// newer ones, left by a run that was abandoned for an older checkpoint, are removed; then
    /// only the newest [`keep`](Self::keep) are kept.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::Checkpoints;
    ///
    /// let dir = std::env::temp_dir().join(format!("synopses-doc-save-{}", std::process::id()));
    /// let store = Checkpoints::open(&dir)?;
    /// let mut cm = CountMin::new(256, 4)?;
    /// cm.observe("a");
    /// store.save(7, &cm)?;
    /// assert_eq!(store.latest::<CountMin>()?.map(|r| (r.epoch, r.state.estimate("a"))), Some((7, 1)));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save<S: Snapshot>(&self, epoch: u64, state: &S) -> Result<(), CheckpointError> {
        static SAVES: AtomicU64 = AtomicU64::new(0);
        let parts = state.snapshot();
        // A name no other save uses: this process, its save count, the epoch.
        let nonce = SAVES.fetch_add(1, Ordering::Relaxed);
        let temp = self.dir.join(format!("{TEMP_PREFIX}{}-{nonce}-{epoch:020}", std::process::id()));
        fs::create_dir(&temp).map_err(CheckpointError::io(&temp))?;
        for (i, part) in parts.iter().enumerate() {
            write_synced(&temp.join(part_name(i)), part)?;
        }
        write_synced(&temp.join(MANIFEST), &manifest(epoch, &parts))?;
        sync_dir(&temp)?;

        // A checkpoint of this epoch already there is set aside, not deleted, until its
        // replacement is in place (a rename cannot replace a directory that holds files); a
        // crash in between leaves it to `open`, which puts it back.
        let path = self.epoch_dir(epoch);
        let replaced = self.dir.join(format!("{REPLACED_PREFIX}{epoch:020}"));
        let replacing = path.exists();
        if replacing {
            if replaced.exists() {
                fs::remove_dir_all(&replaced).map_err(CheckpointError::io(&replaced))?;
            }
            fs::rename(&path, &replaced).map_err(CheckpointError::io(&replaced))?;
        }
        fs::rename(&temp, &path).map_err(CheckpointError::io(&path))?;
        sync_dir(&self.dir)?;
        if replacing {
            fs::remove_dir_all(&replaced).map_err(CheckpointError::io(&replaced))?;
        }

        // Newer checkpoints belong to a run that was abandoned for this one; then only the
        // newest `keep` stay.
        let epochs = self.epochs()?;
        let kept = epochs.iter().filter(|&&e| e <= epoch).count();
        for &old in epochs.iter().filter(|&&e| e > epoch).chain(epochs.iter().take(kept.saturating_sub(self.keep))) {
            let path = self.epoch_dir(old);
            fs::remove_dir_all(&path).map_err(CheckpointError::io(&path))?;
        }
        Ok(())
    }

    /// The newest checkpoint that is intact, restored; `None` when there is none. Damaged
    /// checkpoints on the way (a file missing, truncated or corrupted, a state that does not
    /// decode) are skipped and listed in [`Restored::skipped`]. Any other failure to read
    /// (permissions, an I/O error) is returned rather than skipped: falling back past a
    /// checkpoint that is intact but could not be read would lose it at the next save.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::Checkpoints;
    ///
    /// let dir = std::env::temp_dir().join(format!("synopses-doc-latest-{}", std::process::id()));
    /// let store = Checkpoints::open(&dir)?;
    /// let hll = HyperLogLog::new(10)?;
    /// store.save(1, &hll)?;
    /// store.save(2, &hll)?;
    /// // A crash corrupts the newest checkpoint's only part.
    /// std::fs::write(dir.join("epoch-00000000000000000002").join("part-0"), b"garbage")?;
    /// let restored = store.latest::<HyperLogLog>()?.ok_or("no checkpoint")?;
    /// assert_eq!((restored.epoch, restored.skipped.len()), (1, 1));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn latest<S: Snapshot>(&self) -> Result<Option<Restored<S>>, CheckpointError> {
        let mut skipped = Vec::new();
        for epoch in self.epochs()?.into_iter().rev() {
            match self.load(epoch) {
                Ok(state) => return Ok(Some(Restored { epoch, state, skipped })),
                // Only what a crash leaves (a missing or damaged file) is skipped: any other
                // failure to read (permissions, I/O errors, too many open files) may pass, and
                // restoring an older checkpoint would then lose the newer one at the next save.
                Err(e @ CheckpointError::Damaged { .. }) => skipped.push((epoch, e)),
                Err(CheckpointError::Io { source, path }) if source.kind() == io::ErrorKind::NotFound => {
                    skipped.push((epoch, CheckpointError::Io { source, path }));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The checkpoint of `epoch`, restored, or why it cannot be.
    ///
    /// ```
    /// use synopses::membership::Bloom;
    /// use synopses::stream::{CheckpointError, Checkpoints};
    ///
    /// let dir = std::env::temp_dir().join(format!("synopses-doc-load-{}", std::process::id()));
    /// let store = Checkpoints::open(&dir)?;
    /// store.save(4, &Bloom::new(128, 3)?)?;
    /// assert_eq!(store.load::<Bloom>(4)?, Bloom::new(128, 3)?);
    /// assert!(matches!(store.load::<Bloom>(5), Err(CheckpointError::Io { .. })));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load<S: Snapshot>(&self, epoch: u64) -> Result<S, CheckpointError> {
        let dir = self.epoch_dir(epoch);
        let manifest_path = dir.join(MANIFEST);
        let bytes = fs::read(&manifest_path).map_err(CheckpointError::io(&manifest_path))?;
        let entries = read_manifest(&bytes, epoch).map_err(|e| CheckpointError::damaged(&manifest_path, e))?;
        let mut parts = Vec::new();
        parts.try_reserve_exact(entries.len()).map_err(|_| {
            CheckpointError::damaged(
                &manifest_path,
                DecodeError::InvalidField { field: "parts", reason: "more parts than memory" },
            )
        })?;
        for (i, (len, checksum)) in entries.into_iter().enumerate() {
            let path = dir.join(part_name(i));
            // The manifest's length is checked against the file's before the file is read.
            let actual = fs::metadata(&path).map_err(CheckpointError::io(&path))?.len();
            if actual != len {
                return Err(CheckpointError::damaged(
                    &path,
                    DecodeError::InvalidField { field: "part length", reason: "differs from the manifest" },
                ));
            }
            let part = fs::read(&path).map_err(CheckpointError::io(&path))?;
            if hash_bytes(&part, CHECKSUM_SEED) != checksum {
                return Err(CheckpointError::damaged(&path, DecodeError::ChecksumMismatch));
            }
            parts.push(part);
        }
        S::restore(&parts).map_err(|e| CheckpointError::damaged(&dir, e))
    }

    /// The epochs of the checkpoints in the directory, oldest first (intact or not: see
    /// [`latest`](Self::latest)).
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::Checkpoints;
    ///
    /// let dir = std::env::temp_dir().join(format!("synopses-doc-epochs-{}", std::process::id()));
    /// let store = Checkpoints::open(&dir)?.keep(5)?;
    /// for epoch in [10, 30, 20] {
    ///     store.save(epoch, &HyperLogLog::new(8)?)?;
    /// }
    /// // Saving 20 removed 30: a newer checkpoint than the one saved is from an abandoned run.
    /// assert_eq!(store.epochs()?, [10, 20]);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn epochs(&self) -> Result<Vec<u64>, CheckpointError> {
        let mut epochs = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(CheckpointError::io(&self.dir))? {
            let entry = entry.map_err(CheckpointError::io(&self.dir))?;
            let name = entry.file_name();
            // Only the names `save` writes: 20 decimal digits.
            let digits = name.to_str().and_then(|n| n.strip_prefix(EPOCH_PREFIX));
            let epoch =
                digits.filter(|d| d.len() == 20 && d.bytes().all(|b| b.is_ascii_digit())).and_then(|d| d.parse().ok());
            if let Some(epoch) = epoch {
                epochs.push(epoch);
            }
        }
        epochs.sort_unstable();
        Ok(epochs)
    }

    fn epoch_dir(&self, epoch: u64) -> PathBuf {
        self.dir.join(format!("{EPOCH_PREFIX}{epoch:020}"))
    }
}

fn part_name(i: usize) -> String {
    format!("part-{i}")
}

/// Magic, version, epoch, the number of parts, each part's length and checksum, and a
/// checksum of all that.
fn manifest(epoch: u64, parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MANIFEST_HEAD + parts.len() * MANIFEST_ENTRY + 8);
    out.extend_from_slice(&MANIFEST_MAGIC);
    out.push(MANIFEST_VERSION);
    out.extend_from_slice(&epoch.to_le_bytes());
    // (A state of 2^32 parts or more is beyond any partitioner: at most 2^16 workers.)
    out.extend_from_slice(&u32::try_from(parts.len()).unwrap_or(u32::MAX).to_le_bytes());
    for part in parts {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(&hash_bytes(part, CHECKSUM_SEED).to_le_bytes());
    }
    let checksum = hash_bytes(&out, CHECKSUM_SEED);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// The parts' lengths and checksums, after checking the manifest whole.
fn read_manifest(bytes: &[u8], epoch: u64) -> Result<Vec<(u64, u64)>, DecodeError> {
    let invalid = |field, reason| DecodeError::InvalidField { field, reason };
    let u64_at =
        |at: usize| -> u64 { bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes) };
    if bytes.len() < MANIFEST_HEAD + 8 {
        return Err(DecodeError::Truncated { needed: MANIFEST_HEAD + 8, available: bytes.len() });
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 8);
    if !body.starts_with(&MANIFEST_MAGIC) {
        return Err(DecodeError::BadMagic);
    }
    if hash_bytes(body, CHECKSUM_SEED).to_le_bytes() != checksum {
        return Err(DecodeError::ChecksumMismatch);
    }
    let version = body.get(4).copied().unwrap_or(0);
    if version != MANIFEST_VERSION {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    if u64_at(5) != epoch {
        return Err(invalid("epoch", "differs from the checkpoint's directory"));
    }
    let parts = body.get(13..17).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes) as usize;
    // The length is checked before anything is allocated for the entries.
    if parts.checked_mul(MANIFEST_ENTRY) != Some(body.len() - MANIFEST_HEAD) {
        return Err(invalid("parts", "the manifest's length does not match its number of parts"));
    }
    Ok((0..parts).map(|i| MANIFEST_HEAD + i * MANIFEST_ENTRY).map(|at| (u64_at(at), u64_at(at + 8))).collect())
}

/// Writes a file and flushes it to the device before returning.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let mut file = File::create(path).map_err(CheckpointError::io(path))?;
    file.write_all(bytes).map_err(CheckpointError::io(path))?;
    file.sync_all().map_err(CheckpointError::io(path))
}

/// Flushes a directory's entries (a rename into it, the files created in it) to the device.
/// Only Unix can open a directory to sync it; elsewhere the rename is as durable as the file
/// system makes it.
fn sync_dir(dir: &Path) -> Result<(), CheckpointError> {
    #[cfg(unix)]
    File::open(dir).and_then(|d| d.sync_all()).map_err(CheckpointError::io(dir))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trips_and_rejects_every_truncation() {
        let parts = vec![vec![1, 2, 3], vec![], vec![9; 100]];
        let bytes = manifest(42, &parts);
        let entries = read_manifest(&bytes, 42);
        assert_eq!(entries.map(|e| e.len()), Ok(3));
        assert!(read_manifest(&bytes, 41).is_err());
        for len in 0..bytes.len() {
            assert!(read_manifest(&bytes[..len], 42).is_err(), "truncated to {len}");
        }
    }
}
