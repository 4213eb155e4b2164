from django.db import models


class TimeStampedModel(models.Model):
    """Adds created_at / updated_at to a model."""

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Counter(models.Model):
    """A named counter every process of the embedded default can read (its stand-in for Redis
    INCR): a change committed by a shell must reach the running web process (see hotstate)."""

    key = models.CharField(max_length=200, primary_key=True)
    value = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.key} = {self.value}"
