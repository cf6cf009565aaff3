"""docker-compose.yml cannot run here (no Docker engine), so its wiring is checked by reading it."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
APP_SERVICES = ("web", "worker", "beat")


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_the_production_services_with_the_right_images():
    services = compose()["services"]
    assert {"db", "redis", "web", "worker", "beat"} <= set(services)
    assert services["db"]["image"] == "pgvector/pgvector:pg18"
    assert services["redis"]["image"] == "redis:7"
    # The 18+ image's PGDATA is /var/lib/postgresql/18/docker, inside the volume it declares.
    assert "pgdata:/var/lib/postgresql" in services["db"]["volumes"]
    assert any(arg.startswith("shared_buffers=") for arg in services["db"]["command"])
    assert "PGDATA" not in services["db"]["environment"], "the image's versioned default is kept"
    assert "pgdata" in compose()["volumes"]


def test_web_worker_and_beat_are_built_from_one_dockerfile_and_configured_by_environment():
    services = compose()["services"]
    assert (ROOT / "Dockerfile").exists()
    for name in APP_SERVICES:
        service = services[name]
        assert service["build"] == ".", name
        environment = service["environment"]
        assert "@db:5432/" in environment["DATABASE_URL"], name
        assert environment["REDIS_URL"].startswith("redis://redis:6379"), name
        assert environment["DEBUG"] == "false" and "SECRET_KEY" in environment, name
        assert {"db", "redis"} <= set(service["depends_on"]) or "migrate" in service["depends_on"], name
    assert services["web"]["command"][0] == "gunicorn"
    assert services["worker"]["command"][:4] == ["celery", "-A", "memoryapp", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "memoryapp", "beat"]


def test_migrations_run_before_the_app_starts():
    services = compose()["services"]
    assert services["migrate"]["command"][-2:] == ["migrate", "--noinput"]
    for name in APP_SERVICES:
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_a_user_an_agent_created_can_be_invited_later(db, client):
    import io

    from django.core.management import call_command

    from memoryapp.services.tenancy import organization_get_or_create, user_get_or_create_for_agent

    organization = organization_get_or_create(name="Acme")
    user = user_get_or_create_for_agent(organization=organization, external_id="alex")
    assert not user.has_usable_password()
    out = io.StringIO()
    call_command("invite_user", "--org", "Acme", "--user", "alex", "--username", "alex", stdout=out)
    password = out.getvalue().split("password ")[1].split(" ")[0]
    response = client.post("/login/", {"username": "alex", "password": password})
    assert response.status_code == 302, "logged in"
    assert client.get("/")["Location"] == "/account/password/", "the password was one-time"
