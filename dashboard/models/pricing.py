"""What a model's tokens cost: the price table an Admin keeps, read when a run's agents call
their models (``selectors.model_prices``)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["ModelPrice"]


class ModelPrice(models.Model):
    """The price of one model's tokens, per million, in the dashboard's currency
    (``SUPERSTEP_COST_CURRENCY``). ``model`` is the name the model reports (or its client is
    configured with), matched exactly."""

    model = models.CharField(max_length=200, unique=True)
    input_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, validators=[MinValueValidator(Decimal(0))]
    )
    output_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, validators=[MinValueValidator(Decimal(0))]
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("model",)
        constraints = (
            models.CheckConstraint(
                condition=Q(input_per_million__gte=0, output_per_million__gte=0),
                name="model_price_not_negative",
            ),
            models.CheckConstraint(condition=~Q(model=""), name="model_price_named"),
        )

    def __str__(self) -> str:
        return f"price of {self.model}"

    @property
    def name(self) -> str:
        """What the operations pages call a record by (``components/crud_form.html``)."""
        return self.model
