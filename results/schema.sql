-- speedgate store, schema version 1 (PRAGMA user_version = 1).
-- Embedded in speedgate at build time (agent/store/schema_sql.hpp.in); migrations are cut at their headers.
-- Floats that may be NaN/Inf are stored as the TEXT 'NaN' / 'Inf' / '-Inf'
-- (SQLite would turn a NaN REAL into NULL).
CREATE TABLE environments (
  id INTEGER PRIMARY KEY,
  fingerprint_hash TEXT NOT NULL UNIQUE,
  fingerprint_json TEXT NOT NULL,
  first_seen TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE TABLE campaigns (
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  finished_at TEXT,
  state TEXT NOT NULL CHECK (state IN ('running', 'finished')),
  workload TEXT NOT NULL,
  size TEXT NOT NULL,
  trainer TEXT NOT NULL,
  manifest_json TEXT NOT NULL,
  options_json TEXT NOT NULL,
  environment_id INTEGER REFERENCES environments(id),
  deterministic INTEGER,          -- preflight verdict; 0 = everything gated by tolerance
  note TEXT NOT NULL DEFAULT ''
);
CREATE TABLE trials (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  trial_key TEXT NOT NULL,        -- purpose|config|seed|steps|micro_batch|repeat
  purpose TEXT NOT NULL,          -- preflight, band, candidate, speed_base, speed_cand, memory_probe
  config_key TEXT NOT NULL,       -- '' = baseline (all defaults)
  config_json TEXT NOT NULL,
  seed INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  micro_batch INTEGER NOT NULL,
  grad_accum INTEGER NOT NULL,
  repeat INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'finished')),
  disposition TEXT CHECK (disposition IN ('accepted', 'gate_failed', 'slower', 'pruned', 'oom',
    'killed', 'timeout', 'crash', 'nan', 'invalid_result', 'stale')),
  run_ok INTEGER,                 -- 1 = the trainer produced a valid ok result
  reason TEXT NOT NULL DEFAULT '',
  queued_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  started_at TEXT,
  finished_at TEXT,
  wall_s REAL,
  exit_code INTEGER,
  signal INTEGER,
  samples_per_s REAL,
  tokens_per_s REAL,
  peak_allocated_bytes REAL,
  peak_reserved_bytes REAL,
  breakdown_json TEXT,
  param_digest TEXT,
  optimizer_digest TEXT,
  eval_loss REAL,
  eval_loss_bits TEXT,
  environment_id INTEGER REFERENCES environments(id),
  trial_dir TEXT,
  stdout_log TEXT,
  stderr_log TEXT,
  result_path TEXT,
  result_json TEXT,
  host TEXT,
  controller_pid INTEGER,
  pgid INTEGER,
  heartbeat_at REAL,              -- unix seconds, written by the controller while running
  requeued_from INTEGER REFERENCES trials(id)
);
CREATE INDEX trials_by_key ON trials(campaign_id, trial_key);
CREATE INDEX trials_by_state ON trials(state);
CREATE TABLE steps (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  step INTEGER NOT NULL,
  loss REAL,
  loss_bits TEXT NOT NULL,
  grad_norm REAL,
  grad_norm_bits TEXT NOT NULL,
  seconds REAL,
  PRIMARY KEY (trial_id, step)
);
CREATE TABLE baselines (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  steps INTEGER NOT NULL,
  role TEXT NOT NULL,             -- preflight_a, preflight_b, band
  seed INTEGER NOT NULL,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  UNIQUE (campaign_id, steps, role, seed)
);
CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  strategy TEXT NOT NULL,
  config_key TEXT NOT NULL,
  config_json TEXT NOT NULL,
  steps INTEGER NOT NULL,
  disposition TEXT NOT NULL CHECK (disposition IN ('accepted', 'gate_failed', 'slower', 'pruned',
    'oom', 'killed', 'timeout', 'crash', 'nan', 'invalid_result', 'stale')),
  gate_class TEXT NOT NULL,       -- bitwise | tolerance
  reason TEXT NOT NULL DEFAULT '',
  speedup REAL,
  speedup_spread REAL,
  samples_per_s REAL,
  projected_peak_bytes REAL,
  trial_ids_json TEXT NOT NULL,
  on_frontier INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE TABLE projections (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  config_key TEXT NOT NULL,
  target_micro_batch INTEGER NOT NULL,
  world_size INTEGER NOT NULL,
  zero_stage INTEGER NOT NULL,
  inputs_json TEXT NOT NULL,      -- measured points, breakdown, fit, formula terms
  projected_bytes REAL NOT NULL,
  measured_bytes REAL,            -- when the target fits the device at hand
  relative_error REAL
);
CREATE TABLE kernel_trials (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  family TEXT NOT NULL,
  params_json TEXT NOT NULL,
  evaluation_id INTEGER REFERENCES evaluations(id)
);
CREATE TABLE presets (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  name TEXT NOT NULL,
  budget_bytes REAL NOT NULL,
  path TEXT NOT NULL,
  config_key TEXT NOT NULL,
  evaluation_id INTEGER REFERENCES evaluations(id),
  trial_ids_json TEXT NOT NULL,
  speedup REAL,
  speedup_spread REAL,
  projected_peak_bytes REAL,
  fingerprint_hash TEXT,
  content TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE TABLE heartbeats (
  trial_id INTEGER PRIMARY KEY REFERENCES trials(id),
  pid INTEGER,
  step INTEGER,
  time REAL,
  updated_at REAL NOT NULL
);
-- speedgate store, migration to schema version 2 (PRAGMA user_version = 2): nightly runs.
-- A warm-started trial is a copy of an identical finished trial (same key, same
-- environment) from an earlier campaign; reused_from names the original.
ALTER TABLE trials ADD COLUMN reused_from INTEGER REFERENCES trials(id);
CREATE INDEX trials_by_key_only ON trials(trial_key);
-- A preset that a nightly run found failing the gate or slower than its regression
-- limit: marked here, never picked as a current preset again unless re-emitted.
ALTER TABLE presets ADD COLUMN demoted_at TEXT;
ALTER TABLE presets ADD COLUMN demoted_reason TEXT;
CREATE TABLE nightly_runs (
  campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id),
  previous_campaign_id INTEGER REFERENCES campaigns(id),  -- the newest earlier campaign with an environment
  environment_changed INTEGER NOT NULL DEFAULT 0,
  previous_fingerprint_hash TEXT,
  fingerprint_hash TEXT,
  environment_diff_json TEXT NOT NULL DEFAULT '{}',   -- {field: [before, after]}
  budget_minutes REAL,
  state TEXT NOT NULL CHECK (state IN ('running', 'finished')),
  exit_code INTEGER,
  summary_json TEXT NOT NULL DEFAULT '{}',
  started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  finished_at TEXT
);
CREATE TABLE preset_verifications (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),  -- the night that re-verified it
  preset_id INTEGER REFERENCES presets(id),               -- the row it was recorded as; NULL = file only
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  config_key TEXT NOT NULL,
  verdict TEXT NOT NULL CHECK (verdict IN ('kept', 'demoted')),
  recorded_speedup REAL,
  measured_speedup REAL,
  regression_limit REAL NOT NULL,
  evaluation_id INTEGER REFERENCES evaluations(id),
  reason TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
-- speedgate store, migration to schema version 3 (PRAGMA user_version = 3): executors.
-- Where each trial ran: executor 'local' or 'slurm', the slots it held (GPU ids, CPU
-- slot, or the Slurm node list), its data-parallel rank count and its Slurm job id
-- (recorded at submission, so a resumed campaign can scancel a dead controller's job).
ALTER TABLE trials ADD COLUMN executor TEXT;
ALTER TABLE trials ADD COLUMN slots TEXT;
ALTER TABLE trials ADD COLUMN world_size INTEGER NOT NULL DEFAULT 1;
ALTER TABLE trials ADD COLUMN job_id TEXT;

-- speedgate store, migration to schema version 4 (PRAGMA user_version = 4): kernel-level trials.
-- One row per variant that a kernel trial (protocol §5, `kernel-trial`; its trials row has
-- purpose 'kernel_timing') timed: the family, the parameter string ('plain' for the
-- reference), the micro-batch of the shapes, forward and forward + backward time summed
-- over the family's ops, and whether its outputs and input grads were bitwise the plain
-- variant's. The `kernels` strategy ranks variants by fwdbwd_us.
CREATE TABLE kernel_timings (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  family TEXT NOT NULL,
  params TEXT NOT NULL,
  micro_batch INTEGER NOT NULL,
  fwd_us REAL NOT NULL,
  fwdbwd_us REAL NOT NULL,
  matches_plain INTEGER NOT NULL,
  UNIQUE (trial_id, params)
);
CREATE INDEX kernel_timings_by_campaign ON kernel_timings(campaign_id, family);

-- speedgate store, migration to schema version 5 (PRAGMA user_version = 5): finals at the target.
-- The `finals` strategy (docs/controller.md, "Presets") pairs each memory budget's leading
-- accepted configurations against the baseline at the target micro-batch on the device at
-- hand: `rounds` interleaved rounds, each one baseline run then every finalist (trials with
-- purpose 'final_base' / 'final_cand'). One row per (budget, finalist): speedup is the median
-- of the per-round ratios, spread half their range; disposition 'accepted' when both sides
-- ran every round, else the failure ('gate_failed': not bitwise the baseline at the target;
-- 'oom': it does not fit one device there). Presets pick, per budget with finals, the
-- fastest finalist measured here. A resumed campaign replaces its rows.
CREATE TABLE target_finals (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  budget_name TEXT NOT NULL,
  budget_bytes REAL NOT NULL,
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  config_key TEXT NOT NULL,
  micro_batch INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  rounds INTEGER NOT NULL,
  disposition TEXT NOT NULL CHECK (disposition IN ('accepted', 'gate_failed', 'slower', 'pruned',
    'oom', 'killed', 'timeout', 'crash', 'nan', 'invalid_result', 'stale')),
  reason TEXT NOT NULL DEFAULT '',
  speedup REAL,
  speedup_spread REAL,
  samples_per_s REAL,
  baseline_samples_per_s REAL,
  trial_ids_json TEXT NOT NULL,
  UNIQUE (campaign_id, budget_name, evaluation_id)
);

-- speedgate store, migration to schema version 6 (PRAGMA user_version = 6): speed intervals and host noise.
-- Speed verdicts carry a one-sided 95 % interval (docs/controller.md, "Speed verdicts"):
-- evaluations and finals store its bounds and pair count; `inconclusive` is the verdict of an
-- interval that still straddles 1 + min effect at the pair cap. SQLite cannot alter a CHECK
-- constraint, so the disposition lists are edited in the schema text (the documented
-- writable_schema procedure: the change admits a new value, every stored row stays valid).
-- It comes last: ALTER TABLE edits the schema text at offsets parsed before it, so no ALTER
-- may follow it before the schema is read again (the store bumps the schema cookie).
ALTER TABLE evaluations ADD COLUMN speedup_lo REAL;
ALTER TABLE evaluations ADD COLUMN speedup_hi REAL;
ALTER TABLE evaluations ADD COLUMN pairs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE target_finals ADD COLUMN speedup_lo REAL;
ALTER TABLE target_finals ADD COLUMN speedup_hi REAL;
-- Every ABAB pair behind a speed verdict: the two runs' steady-state step seconds (median
-- after warm-up) and log(base / cand). evaluation_id is NULL for A/A noise pairs.
CREATE TABLE speed_pairs (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  evaluation_id INTEGER REFERENCES evaluations(id),
  config_key TEXT NOT NULL,
  steps INTEGER NOT NULL,
  pair_index INTEGER NOT NULL,
  base_trial_id INTEGER NOT NULL REFERENCES trials(id),
  cand_trial_id INTEGER NOT NULL REFERENCES trials(id),
  base_step_s REAL NOT NULL,
  cand_step_s REAL NOT NULL,
  log_ratio REAL NOT NULL
);
CREATE INDEX speed_pairs_by_evaluation ON speed_pairs(evaluation_id);
CREATE INDEX speed_pairs_by_campaign ON speed_pairs(campaign_id);
-- The host's noise, from A/A pairs of the baseline at a step budget: the standard deviation
-- of their log-ratios and the smallest speedup the speed rule detects with 80 % power at
-- max_repeats pairs (detectable_speedup), given min_effect.
CREATE TABLE host_noise (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  steps INTEGER NOT NULL,
  micro_batch INTEGER NOT NULL,
  pairs INTEGER NOT NULL,
  sd_log_ratio REAL NOT NULL,
  mean_log_ratio REAL NOT NULL,
  detectable_speedup REAL NOT NULL,
  resolution REAL NOT NULL,
  min_effect REAL NOT NULL,
  max_repeats INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  UNIQUE (campaign_id, steps, micro_batch)
);
-- The rounding band (docs/controller.md, "Tolerance gate"): per step budget, the largest
-- deviation of a baseline run with --perturb EPS from the plain run at the same seed.
CREATE TABLE rounding_bands (
  id INTEGER PRIMARY KEY,
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
  steps INTEGER NOT NULL,
  perturb_eps REAL NOT NULL,
  seeds INTEGER NOT NULL,
  curve_rms REAL NOT NULL,
  eval_loss_abs REAL NOT NULL,
  grad_norm_log REAL NOT NULL,
  seed_curve_rms REAL NOT NULL,
  trial_ids_json TEXT NOT NULL,
  UNIQUE (campaign_id, steps)
);
PRAGMA writable_schema = ON;
UPDATE sqlite_master SET sql = replace(sql, '''slower'',', '''slower'', ''inconclusive'',')
  WHERE type = 'table' AND name IN ('trials', 'evaluations', 'target_finals');
PRAGMA writable_schema = OFF;
