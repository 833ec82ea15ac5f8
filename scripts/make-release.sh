#!/usr/bin/env bash
# The release step (issue 48): into OUT_DIR, the release archive, the container image and the
# MCP bundle (scripts/make-dist.sh, make-image.sh, make-mcpb.sh), each with its .sha256, and
# OUT_DIR/server.json: the repository's server.json whose packages are exactly what this step
# made (the bundle with its fileSha256, the image under the tag it carries), refused when they
# differ. Usage: make-release.sh BUILD_DIR [OUT_DIR] (default OUT_DIR: dist). Needs root (the
# image's home directory belongs to its user), umoci, help2man and the npm packages.
set -euo pipefail
build=$(cd "$1" && pwd)
out=${2:-dist}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
"$src/scripts/make-dist.sh" "$build" "$out"
"$src/scripts/make-image.sh" "$build" "$out"
"$src/scripts/make-mcpb.sh" "$build" "$out"
python3 - "$src/server.json" "$out" <<'PY'
import hashlib, json, os, sys, tarfile
template, out = sys.argv[1:]
server = json.load(open(template))
version = server["version"]
made = {f for f in os.listdir(out) if not f.endswith(".sha256") and f != "server.json"}
kinds = {p["registryType"] for p in server["packages"]}
if kinds != {"mcpb", "oci"}:
    sys.exit(f"server.json lists {sorted(kinds)}: the release makes an mcpb and an oci image")
for package in server["packages"]:
    if package["registryType"] == "mcpb":
        name = package["identifier"].rsplit("/", 1)[-1]
        if name not in made:
            sys.exit(f"server.json names {name}, which this step did not make ({sorted(made)})")
        package["fileSha256"] = hashlib.sha256(open(os.path.join(out, name), "rb").read()).hexdigest()
    else:
        image = f"agency-mcp-{version}-oci.tar"
        if image not in made or not package["identifier"].endswith(f":{version}"):
            sys.exit(f"server.json's image {package['identifier']} is not this step's {image}")
        with tarfile.open(os.path.join(out, image)) as oci:
            index = json.load(oci.extractfile("./index.json"))
        tags = [m["annotations"]["org.opencontainers.image.ref.name"] for m in index["manifests"]]
        if tags != [f"agency-mcp:{version}"]:
            sys.exit(f"the image archive is tagged {tags}, not agency-mcp:{version}")
json.dump(server, open(os.path.join(out, "server.json"), "w"), indent=2)
print(f"{out}/server.json: {', '.join(p['registryType'] for p in server['packages'])}")
PY
