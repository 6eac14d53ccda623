"""The in-container contract: where things are inside every container this tool starts.

One module for the host and for the programs that run inside the containers (the sandbox
tools, the audit hook): the host imports it as ``sandbox_tools.contract``; the in-container
programs get it copied beside them. Stdlib only, constants only, so that it runs on every
Python an environment may have.

Every environment (recipe or LLM set-up) keeps this contract:

- :data:`TESTBED` holds the repository (at the base commit once phase 4 has run);
- sourcing :data:`ACTIVATE` in bash activates the environment's Python (:data:`VENV`),
  exports the environment's variables and changes to :data:`TESTBED`;
- everything else of the tool lives under :data:`SWE_DIR`, which the participant may read but
  grading replaces where it matters (the evaluation directory is root's).
"""

TESTBED = "/testbed"  # the repository, the participant's working directory
SWE_DIR = "/opt/swe"  # the tool's own files in the container
VENV = f"{SWE_DIR}/venv"  # the environment's virtual environment
ACTIVATE = f"{SWE_DIR}/activate.sh"  # sourcing it: the venv, the variables, cd TESTBED

# set-up (phases 2-4)
BUILD_CONSTRAINTS = f"{SWE_DIR}/build-constraints.txt"  # PIP_CONSTRAINT of the environment
VENV_SEED = f"{SWE_DIR}/venv-seed.txt"  # what `python3 -m venv` seeded besides pip, as pins
DROPPED_PINS = f"{SWE_DIR}/dropped-pins.txt"  # pins no release of which installs here
PYTHON_MIRROR_DIR = f"{SWE_DIR}/python-mirror"  # a host's Python builds, during set-up only
UV_VENV = f"{SWE_DIR}/uv"  # the base image's uv, in a venv of its own
CLEAN_GIT = f"{SWE_DIR}/clean-git"  # the clean history, before it replaces TESTBED/.git
SHARED_PACKS = f"{SWE_DIR}/shared-packs.txt"  # the history packs an image below holds
SERVICES_DIR = f"{SWE_DIR}/services"  # what a recipe's services need (servers' files)

# phase 5: the participant's tools
TOOLS_PATH = f"{SWE_DIR}/tools.py"  # the tools program (sandbox_tools/tools.py)
CONTRACT_PATH = f"{SWE_DIR}/contract.py"  # this module, beside it
REQUEST_DIR = f"{SWE_DIR}/requests"  # large tool requests, written as files
STATE_ROOT = f"{SWE_DIR}/state"  # the shell's state per container (variables, directory)

# phase 7: grading (root's directory; the tests run as TEST_USER and cannot read it)
EVAL_DIR = f"{SWE_DIR}/eval"
AUDIT_DIR = f"{SWE_DIR}/audit"  # the audit hook, its configuration and its channel
AUDIT_CONFIG = f"{AUDIT_DIR}/config.json"
TEST_USER = "nobody"  # the unprivileged user the tests run as (Debian's nobody)
REINSTALL_TMP = "/tmp/.swe-reinstall"  # prefix of a contained reinstall's files
