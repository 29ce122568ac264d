#!/usr/bin/env node
/**
 * Checks that klet's CRI subset (proto/runtime/v1/api.proto) is wire-compatible
 * with the upstream Kubernetes CRI definition.
 *
 *   node scripts/check-cri-proto.js [UPSTREAM_PROTO]
 *
 * Everything declared in our file must exist upstream with the same number,
 * type, cardinality (repeated / map) and, for enums, the same value numbers;
 * every rpc must have the same request/response types and streaming. Fields we
 * leave out are fine: decoders skip unknown fields. A mismatch would not fail
 * at runtime, it would silently corrupt data, hence this check.
 *
 * Without an argument the upstream file is located in the Go module cache via
 * `go mod download -json k8s.io/cri-api@<version>` run in a throwaway module.
 * Exits 0 when identical, 1 listing every difference, 2 on a usage problem.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const CRI_API_VERSION = 'v0.31.0';
const here = dirname(fileURLToPath(import.meta.url));
const OURS = join(here, '..', 'proto', 'runtime', 'v1', 'api.proto');

function fail(message) {
  console.error(`check-cri-proto: ${message}`);
  process.exit(2);
}

/** Finds upstream api.proto in the Go module cache, downloading the module if needed. */
function locateUpstream() {
  const dir = mkdtempSync(join(tmpdir(), 'klet-cri-api-'));
  try {
    writeFileSync(join(dir, 'go.mod'), 'module klet.local/cricheck\n\ngo 1.21\n');
    let out;
    try {
      out = execFileSync('go', ['mod', 'download', '-json', `k8s.io/cri-api@${CRI_API_VERSION}`], {
        cwd: dir,
        env: { ...process.env, GOFLAGS: '-mod=mod' },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      const detail = err.code === 'ENOENT' ? 'go is not installed' : String(err.stderr || err.message).trim();
      fail(`cannot locate k8s.io/cri-api@${CRI_API_VERSION} (${detail}); pass the upstream api.proto path as an argument`);
    }
    const info = JSON.parse(out);
    if (info.Error) fail(`go mod download: ${info.Error}`);
    return join(info.Dir, 'pkg', 'apis', 'runtime', 'v1', 'api.proto');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Parses a proto file on its own (imports such as gogo.proto are not loaded; only their options refer to them). */
function load(path) {
  if (!existsSync(path)) fail(`${path}: no such file`);
  try {
    const parsed = protobuf.parse(readFileSync(path, 'utf8'), { keepCase: true });
    parsed.root.resolveAll();
    return parsed;
  } catch (err) {
    // A duplicate field number or an unknown type lands here.
    console.error(`check-cri-proto: ${path}: ${err.message}`);
    process.exit(1);
  }
}

/** Every message, enum and service under a namespace, keyed by full name. */
function collect(ns, out = new Map()) {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type || nested instanceof protobuf.Enum || nested instanceof protobuf.Service) {
      out.set(nested.fullName, nested);
    }
    if (nested instanceof protobuf.Namespace) collect(nested, out);
  }
  return out;
}

function kind(obj) {
  if (obj instanceof protobuf.Type) return 'message';
  if (obj instanceof protobuf.Enum) return 'enum';
  return 'service';
}

/** Only repeated numeric scalars and enums have a packed encoding. */
function packable(field) {
  if (!field.repeated || field.map) return false;
  if (field.type === 'string' || field.type === 'bytes') return false;
  return !(field.resolvedType instanceof protobuf.Type);
}

/** A comparable description of a field's wire shape. */
function fieldShape(field) {
  return {
    type: field.resolvedType ? field.resolvedType.fullName : field.type,
    cardinality: field.map ? `map<${field.keyType}>` : field.repeated ? 'repeated' : 'singular',
    packed: packable(field) ? String(field.packed) : '-',
    oneof: field.partOf ? field.partOf.name : '-',
    optional: field.options?.proto3_optional ? 'optional' : '-',
  };
}

function compareMessage(name, ours, theirs, problems) {
  for (const field of ours.fieldsArray) {
    const where = `${name}.${field.name}`;
    const up = theirs.fields[field.name];
    if (!up) {
      const byNumber = theirs.fieldsById[field.id];
      const hint = byNumber ? ` (number ${field.id} is "${byNumber.name}" there)` : '';
      problems.push(`${where}: no such field upstream${hint}`);
      continue;
    }
    if (up.id !== field.id) problems.push(`${where}: number ${field.id}, upstream ${up.id}`);
    const a = fieldShape(field);
    const b = fieldShape(up);
    for (const key of Object.keys(a)) {
      if (a[key] !== b[key]) problems.push(`${where}: ${key} ${a[key]}, upstream ${b[key]}`);
    }
  }
  // Two of our fields sharing a number would be caught above, but say it plainly.
  const seen = new Map();
  for (const field of ours.fieldsArray) {
    if (seen.has(field.id)) {
      problems.push(`${name}: fields ${seen.get(field.id)} and ${field.name} share number ${field.id}`);
    }
    seen.set(field.id, field.name);
  }
}

function compareEnum(name, ours, theirs, problems) {
  for (const [value, number] of Object.entries(ours.values)) {
    if (!(value in theirs.values)) problems.push(`${name}.${value}: no such enum value upstream`);
    else if (theirs.values[value] !== number) {
      problems.push(`${name}.${value}: value ${number}, upstream ${theirs.values[value]}`);
    }
  }
}

function compareService(name, ours, theirs, problems) {
  for (const method of ours.methodsArray) {
    const where = `${name}.${method.name}`;
    const up = theirs.methods[method.name];
    if (!up) {
      problems.push(`${where}: no such rpc upstream`);
      continue;
    }
    const pairs = [
      ['request', method.resolvedRequestType.fullName, up.resolvedRequestType.fullName],
      ['response', method.resolvedResponseType.fullName, up.resolvedResponseType.fullName],
      ['request streaming', Boolean(method.requestStream), Boolean(up.requestStream)],
      ['response streaming', Boolean(method.responseStream), Boolean(up.responseStream)],
    ];
    for (const [what, a, b] of pairs) if (a !== b) problems.push(`${where}: ${what} ${a}, upstream ${b}`);
  }
}

function main() {
  const upstreamPath = process.argv[2] ?? locateUpstream();
  const ours = load(OURS);
  const theirs = load(upstreamPath);
  const problems = [];

  if (ours.package !== theirs.package) problems.push(`package ${ours.package}, upstream ${theirs.package}`);
  if (ours.syntax !== theirs.syntax) problems.push(`syntax ${ours.syntax}, upstream ${theirs.syntax}`);

  const upstream = collect(theirs.root);
  let checked = 0;
  for (const [name, obj] of collect(ours.root)) {
    checked++;
    const up = upstream.get(name);
    if (!up) {
      problems.push(`${name}: no such ${kind(obj)} upstream`);
      continue;
    }
    if (kind(up) !== kind(obj)) {
      problems.push(`${name}: a ${kind(obj)} here, a ${kind(up)} upstream`);
      continue;
    }
    if (obj instanceof protobuf.Type) compareMessage(name, obj, up, problems);
    else if (obj instanceof protobuf.Enum) compareEnum(name, obj, up, problems);
    else compareService(name, obj, up, problems);
  }

  if (problems.length > 0) {
    console.error(`check-cri-proto: ${OURS} differs from ${upstreamPath}:`);
    for (const p of problems) console.error(`  ${p.replace(/^\./, '')}`);
    console.error(`${problems.length} difference(s)`);
    process.exit(1);
  }
  console.log(`check-cri-proto: ${checked} definitions match k8s.io/cri-api (${upstreamPath})`);
}

main();
