# One image for web, worker and beat; configured only through environment variables.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_NO_CACHE_DIR=1

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# collectstatic needs no database; the placeholder URLs only keep settings from starting embedded servers.
RUN DATABASE_URL=postgres://build@localhost/build REDIS_URL=redis://localhost:6379/0 \
    python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 memoryapp
USER memoryapp
EXPOSE 8000
CMD ["gunicorn", "memoryapp.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4", "--timeout", "120"]
