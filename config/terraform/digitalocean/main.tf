# One droplet per node. The image (a snapshot) must hold the media server and the Switchyard node
# agent as the systemd unit `switchyard-agent`, which reads /etc/switchyard/agent.env. DigitalOcean
# needs no provider per region: the droplet's region slug comes from regionVariables.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    digitalocean = {
      source  = "digitalocean/digitalocean"
      version = ">= 2.30"
    }
  }
}

variable "nodes" {
  type = map(object({ role = string, region = string }))
}

variable "tokens" {
  type      = map(string)
  sensitive = true
}

variable "service_url" {
  type = string
}

variable "group" {
  type = string
}

variable "region" {
  type = string
}

variable "region_slug" {
  type        = string
  description = "The DigitalOcean region of this Switchyard region, e.g. nyc3 or fra1."
}

variable "image" {
  type        = string
  description = "The snapshot id or image slug with the media server and the node agent."
}

variable "sizes" {
  type = map(string)
  default = {
    origin     = "c-2"
    edge       = "c-2"
    relay      = "c-2"
    transcoder = "c-4"
  }
}

variable "vpc_uuid" {
  type    = string
  default = null
}

variable "ssh_keys" {
  type    = list(string)
  default = []
}

variable "scope" {
  type    = string
  default = "live"
}

resource "digitalocean_droplet" "node" {
  for_each = var.nodes

  name     = "switchyard-${each.key}"
  image    = var.image
  region   = var.region_slug
  size     = var.sizes[each.value.role]
  vpc_uuid = var.vpc_uuid
  ssh_keys = var.ssh_keys
  tags     = ["switchyard", "switchyard-${var.group}", "switchyard-${each.value.role}"]

  user_data = templatefile("${path.module}/user-data.sh.tftpl", {
    service_url = var.service_url
    node_id     = each.key
    token       = var.tokens[each.key]
    role        = each.value.role
    scope       = var.scope
  })

  lifecycle {
    ignore_changes = [user_data, image]
  }
}

output "nodes" {
  value = { for id, d in digitalocean_droplet.node : id => { public = d.ipv4_address, private = d.ipv4_address_private } }
}
