# Node agents on this machine, one process per node, started and stopped by Terraform itself:
# the whole `terraform` platform path without a cloud account. Each node gets a stable loopback
# address from its id (127.64.0.0/10 holds four million), so that serverAddress tells nodes apart.

terraform {
  required_version = ">= 1.5.0"
}

variable "nodes" {
  type        = map(object({ role = string, region = string }))
  description = "The nodes of this region, by node id."
}

variable "tokens" {
  type        = map(string)
  sensitive   = true
  description = "Bootstrap node tokens, by node id."
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

variable "agent" {
  type        = string
  description = "Absolute path of the node agent: dist/src/agent/main.js of a built Switchyard."
}

variable "node_binary" {
  type    = string
  default = "node"
}

variable "state_dir" {
  type        = string
  description = "Absolute path of a directory for each node's pid file and log."
}

variable "network" {
  type    = string
  default = "127.64.0.0/10"
}

variable "port" {
  type    = number
  default = 0
}

variable "scope" {
  type    = string
  default = "live"
}

locals {
  addresses = { for id, n in var.nodes : id => cidrhost(var.network, parseint(substr(sha1(id), 0, 5), 16) + 2) }
}

resource "terraform_data" "node" {
  for_each = var.nodes

  input = {
    address = local.addresses[each.key]
    dir     = "${var.state_dir}/${var.group}/${each.key}"
  }

  provisioner "local-exec" {
    command = <<-EOT
      mkdir -p '${self.input.dir}'
      setsid nohup '${var.node_binary}' '${var.agent}' --node-id '${each.key}' >>'${self.input.dir}/agent.log' 2>&1 < /dev/null &
      echo $! > '${self.input.dir}/agent.pid'
    EOT
    environment = {
      SWITCHYARD_URL          = var.service_url
      SWITCHYARD_NODE_ID      = each.key
      SWITCHYARD_NODE_TOKEN   = var.tokens[each.key]
      SWITCHYARD_NODE_ROLE    = each.value.role
      SWITCHYARD_NODE_SCOPE   = var.scope
      SWITCHYARD_NODE_ADDRESS = local.addresses[each.key]
      SWITCHYARD_NODE_PORT    = tostring(var.port)
      SWITCHYARD_NODE_DIR     = "${var.state_dir}/${var.group}/${each.key}"
    }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "kill $(cat '${self.input.dir}/agent.pid') 2>/dev/null; rm -rf '${self.input.dir}'"
  }
}

output "nodes" {
  value = { for id, n in terraform_data.node : id => { public = n.input.address, private = n.input.address } }
}
