"""The components' configs in documented order, and every setting's flat name."""

from __future__ import annotations

from orchestrator.settings.base import ComponentConfig
from orchestrator.settings.dataset import DatasetConfig
from orchestrator.settings.environment import EnvironmentConfig
from orchestrator.settings.grading import GradingConfig
from orchestrator.settings.housekeeping import HousekeepingConfig
from orchestrator.settings.participant import ParticipantConfig
from orchestrator.settings.repos import RepoConfig
from orchestrator.settings.run import RunConfig
from orchestrator.settings.sandbox import SandboxConfig
from orchestrator.settings.serve import ServeConfig
from orchestrator.settings.setup_agent import SetupAgentConfig
from orchestrator.settings.storage import StorageConfig
from orchestrator.settings.validation import ValidationConfig

# group (the attribute of Settings) -> the component's config model
GROUPS: dict[str, type[ComponentConfig]] = {
    "storage": StorageConfig,
    "dataset": DatasetConfig,
    "repos": RepoConfig,
    "environment": EnvironmentConfig,
    "setup_agent": SetupAgentConfig,
    "validation": ValidationConfig,
    "sandbox": SandboxConfig,
    "housekeeping": HousekeepingConfig,
    "participant": ParticipantConfig,
    "grading": GradingConfig,
    "run": RunConfig,
    "serve": ServeConfig,
}
# every setting's flat name -> its group
GROUP_OF: dict[str, str] = {
    name: group for group, model in GROUPS.items() for name in model.model_fields
}
SECRETS = ("anthropic_api_key", "serve_token")
