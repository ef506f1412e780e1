#!/usr/bin/env bash
# Checks deploy/: every other systemd unit that runs cueline is hardened as cueline.service is, the units pass
# `systemd-analyze verify`, every YAML file parses (and the manifests have the kinds they should), and the container
# build runs the same build command the README gives.
# Usage: scripts/ci/check-deploy.sh [path to a built cueline binary, for the unit's ExecStart]
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$(repo_root)"
failures=0
fail() { printf 'FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }
pass() { printf 'ok: %s\n' "$*"; }

# 1. Hardening: every sandboxing directive of cueline.service ([Service]: DynamicUser, NoNewPrivileges, Protect*,
# Private*, Restrict*, SystemCall*, capabilities, UMask…), with each of its values, is in force in every other unit
# of deploy/systemd that runs cueline (ExecStart…=/usr/local/bin/cueline), unless EXEMPT says why it does not apply
# there. Repeated list directives (SystemCallFilter=, RestrictAddressFamilies=…) add up and an empty one resets them;
# for the others the last one wins, as systemd reads them.
if python3 - <<'PY'
import glob, re, sys
HARDENING = re.compile(r"(DynamicUser|User|Group|SupplementaryGroups|NoNewPrivileges|Protect\w*|Private\w*|Restrict\w*"
                       r"|LockPersonality|MemoryDenyWriteExecute|SystemCall\w*|CapabilityBoundingSet|AmbientCapabilities"
                       r"|UMask|RemoveIPC|KeyringMode|ProcSubset|DevicePolicy|DeviceAllow|IPAddress\w*|ReadWritePaths"
                       r"|ReadOnlyPaths|InaccessiblePaths|NoExecPaths|Personality)$")
LISTS = {"SystemCallFilter", "SystemCallArchitectures", "RestrictAddressFamilies", "DeviceAllow", "IPAddressDeny",
         "IPAddressAllow", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "NoExecPaths", "SupplementaryGroups"}
# (directive, value) of cueline.service that another unit may leave out, and why: only for units that do not serve.
EXEMPT = {("SystemCallFilter", "sched_setaffinity"): "allowed for pin_event_loops, which only `cueline serve` reads"}

def service(path):
    """The [Service] section's hardening directives in force: name -> values."""
    section, found, runs = None, {}, []
    for raw in open(path):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
            continue
        if section != "[Service]" or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if key.startswith("ExecStart"):
            runs.append(value)
        if not HARDENING.match(key):
            continue
        if key in LISTS:
            found[key] = [] if value == "" else found.get(key, []) + [value]
        else:
            found[key] = [value]
    return found, runs

main, _ = service("deploy/systemd/cueline.service")
ok = True
for path in sorted(glob.glob("deploy/systemd/*.service")):
    if path.endswith("/cueline.service"):
        continue
    found, runs = service(path)
    if not any(re.match(r"[-@:+!]*\S*/cueline(\s|$)", r) for r in runs):
        continue
    serves = any(re.search(r"/cueline\s+serve(\s|$)", r) for r in runs)
    missing = [f"{key}={value}" for key, values in main.items() for value in values
               if value not in found.get(key, []) and (serves or (key, value) not in EXEMPT)]
    if missing:
        ok = False
        print(f"{path} runs cueline without the hardening of cueline.service: {', '.join(missing)}")
    else:
        print(f"{path}: every hardening directive of cueline.service"
              + (f" (not {', '.join(f'{k}={v}' for k, v in EXEMPT)}: {'; '.join(EXEMPT.values())})" if not serves else ""))
sys.exit(0 if ok else 1)
PY
then pass "every unit that runs cueline is hardened as deploy/systemd/cueline.service is"; else fail "systemd hardening"; fi

# 2. systemd units. verify needs the ExecStart binaries to exist: point them at the built binary in a copy.
if ! command -v systemd-analyze >/dev/null; then apt_install systemd; fi
binary=${1:-$(swift build --show-bin-path 2>/dev/null)/cueline}
[ -x "$binary" ] || die "no built cueline at $binary (run swift build, or pass its path)"
unit_dir=$(mktemp -d)
for unit in cueline.service cueline-checkpoint.service cueline-checkpoint.timer; do
    sed "s|/usr/local/bin/cueline|$binary|g" "deploy/systemd/$unit" >"$unit_dir/$unit"
done
for unit in cueline.service cueline-checkpoint.service cueline-checkpoint.timer; do
    if out=$(cd "$unit_dir" && systemd-analyze verify "$unit_dir/$unit" 2>&1) && [ -z "$out" ]; then
        pass "systemd-analyze verify deploy/systemd/$unit"
    else
        fail "systemd-analyze verify $unit: $out"
    fi
done
rm -rf "$unit_dir"

# 3. YAML: compose file and Kubernetes manifests parse, with the expected kinds.
python3 -c 'import yaml' 2>/dev/null || apt_install python3-yaml
if python3 - <<'PY'
import glob, sys, yaml
ok = True
compose = yaml.safe_load(open("deploy/compose.yaml"))
for service in ("postgres", "migrate", "cueline-a", "cueline-b", "nginx"):
    if service not in compose.get("services", {}):
        print(f"compose.yaml has no service {service}"); ok = False
kinds = set()
for path in sorted(glob.glob("deploy/k8s/*.yaml")):
    for doc in yaml.safe_load_all(open(path)):
        if not doc: continue
        if "kind" not in doc or "apiVersion" not in doc or "metadata" not in doc:
            print(f"{path}: a document without kind/apiVersion/metadata"); ok = False
        kinds.add(doc.get("kind"))
        if doc.get("kind") == "Deployment":
            container = doc["spec"]["template"]["spec"]["containers"][0]
            if container["readinessProbe"]["httpGet"]["path"] != "/readyz" or container["livenessProbe"]["httpGet"]["path"] != "/healthz":
                print(f"{path}: probes must use /readyz and /healthz"); ok = False
missing = {"Deployment", "Service", "Job", "Secret", "PodDisruptionBudget"} - kinds
if missing:
    print(f"deploy/k8s lacks {sorted(missing)}"); ok = False
sys.exit(0 if ok else 1)
PY
then pass "deploy/compose.yaml and deploy/k8s/*.yaml parse and hold the expected services and kinds"; else fail "YAML check"; fi

# 4. The container build runs the README's build command.
build_line=$(grep -E '^RUN scripts/build\.sh' deploy/Dockerfile | sed 's/^RUN //')
if [ -n "$build_line" ] && grep -qF "scripts/build.sh" README.md && grep -qF "$(echo "$build_line" | cut -d' ' -f1)" README.md; then
    pass "deploy/Dockerfile builds with the README's command ($build_line)"
else
    fail "deploy/Dockerfile does not build with scripts/build.sh as the README says"
fi

[ "$failures" -eq 0 ] || { printf '%d deploy check(s) failed\n' "$failures" >&2; exit 1; }
