"""PartnerLink: connect partners' systems to merchant accounts."""

__version__ = "0.1.0"
