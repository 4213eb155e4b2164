FROM python:3.11-slim-bookworm

# Node runs the npm-distributed MCP servers (npx …) that stdio entries commonly use.
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm git postgresql-client \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install --no-cache-dir -r requirements.txt \
 && pip install --no-cache-dir --no-deps -r requirements-nodeps.txt
COPY . .
RUN SECRET_KEY=build MCPHUB_ENCRYPTION_KEYS=YnVpbGQtb25seS1lbmNyeXB0aW9uLWtleS0zMmJ5dGU= \
    python manage.py collectstatic --noinput -v 0

ENV PYTHONUNBUFFERED=1
EXPOSE 8000
CMD ["python", "-m", "mcphub.server", "--host", "0.0.0.0", "--port", "8000"]
